package openhands

import (
	"fmt"
	"io"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsondoc"
)

// PvisorLocators implements trajectory.PvisorLocated: pVisor names a V0
// step by its action event's id ("event:3"), read from the source array.
// V1 conversations, which pVisor does not read, keep "events:FIRST-LAST".
func (format) PvisorLocators(src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int) ([]string, error) {
	steps := t.Steps()
	if afterStep < len(steps) {
		steps = steps[:afterStep]
	}
	if t.Format == FormatV1Events {
		out := make([]string, len(steps))
		for i, a := range steps {
			out[i] = fmt.Sprintf("events:%d-%d", a.Locator.First-1, a.Locator.Last-1)
		}
		return out, nil
	}
	if len(steps) == 0 {
		return nil, nil
	}
	if t.Offset > 0 {
		src, size = io.NewSectionReader(src, t.Offset, size-t.Offset), size-t.Offset
	}
	d, err := jsondoc.OpenRecords(io.NewSectionReader(src, 0, size), records)
	if err != nil {
		return nil, err
	}
	want := map[int]int{} // event index → step position
	for i, a := range steps {
		want[a.Locator.First] = i
	}
	out := make([]string, len(steps))
	for i, found := 0, 0; found < len(steps); i++ {
		if !d.More() {
			return nil, trajectory.Errorf(0, "the file changed since it was decoded: event %d is missing", i)
		}
		raw, _, err := d.Raw("event")
		if err != nil {
			return nil, err
		}
		if k, ok := want[i]; ok {
			out[k] = "event:" + gjson.GetBytes(raw, "id").Raw
			found++
		}
	}
	return out, nil
}
