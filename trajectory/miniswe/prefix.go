package miniswe

import (
	"fmt"
	"io"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsondoc"
)

// WritePrefix writes the trajectory with its messages cut after the last
// observation of step afterStep. Everything else is the original bytes: the
// cut removes exactly the later messages (from the end of the last kept
// message to the end of the last message), so the indentation, info and
// trajectory_format stay as mini wrote them and mini's runner can restore
// agent.messages from it.
func (format) WritePrefix(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int) error {
	if err := trajectory.CheckBoundary(t, afterStep); err != nil {
		return err
	}
	a, _ := t.Step(afterStep)
	last := a.Locator.Last

	d, err := jsondoc.OpenRecords(io.NewSectionReader(src, 0, size), records)
	if err != nil {
		return err
	}
	keep, end := int64(-1), int64(-1)
	for i := 0; d.More(); i++ {
		if err := d.Skip("messages"); err != nil {
			return err
		}
		end = d.Offset()
		if i == last {
			keep = end
		}
	}
	if keep < 0 {
		return trajectory.Errorf(0, "the file changed since it was decoded: message %d is missing", last)
	}
	if _, err := io.Copy(w, io.NewSectionReader(src, 0, keep)); err != nil {
		return fmt.Errorf("writing the mini-swe-agent prefix: %w", err)
	}
	if _, err := io.Copy(w, io.NewSectionReader(src, end, size-end)); err != nil {
		return fmt.Errorf("writing the mini-swe-agent prefix: %w", err)
	}
	return nil
}

// records is where WritePrefix finds the messages: the "messages" of the
// trajectory object, or the bare list.
var records = jsondoc.Records{
	Key:      "messages",
	Object:   "trajectory",
	Expected: "a mini-swe-agent trajectory",
	Missing:  `the trajectory has no "messages"`,
}
