package sweagent

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsondoc"
)

// WritePrefix writes the .traj with trajectory cut after entry afterStep-1
// and history cut before the next step's assistant message (so the step's
// observation message stays). Everything else is the original bytes: each
// cut removes exactly the later elements (from the end of the last kept
// one to the end of the last one), so indentation, info and replay_config
// stay as SWE-agent wrote them.
func (format) WritePrefix(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int) error {
	if err := trajectory.CheckBoundary(t, afterStep); err != nil {
		return err
	}
	a, _ := t.Step(afterStep)
	keepEntries := a.Locator.Last + 1

	d := jsondoc.New(io.NewSectionReader(src, 0, size))
	tok, err := d.Open()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return trajectory.Errorf(0, "the file changed since it was decoded: it is no longer an object")
	}
	var cuts [][2]int64
	for d.More() {
		k, err := d.Key("trajectory")
		if err != nil {
			return err
		}
		if k != "trajectory" && k != "history" {
			if err := d.Skip(k); err != nil {
				return err
			}
			continue
		}
		cut, err := cutList(d, k, keepEntries)
		if err != nil {
			return err
		}
		if cut[0] < cut[1] {
			cuts = append(cuts, cut)
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i][0] < cuts[j][0] })
	var off int64
	for _, c := range cuts {
		if _, err := io.Copy(w, io.NewSectionReader(src, off, c[0]-off)); err != nil {
			return fmt.Errorf("writing the SWE-agent prefix: %w", err)
		}
		off = c[1]
	}
	if _, err := io.Copy(w, io.NewSectionReader(src, off, size-off)); err != nil {
		return fmt.Errorf("writing the SWE-agent prefix: %w", err)
	}
	return nil
}

// cutList reads one of the two arrays and returns the byte range to drop:
// the trajectory's entries from index keep on, the history's messages from
// the (keep+1)-th non-demo assistant message on.
func cutList(d *jsondoc.Doc, k string, keep int) ([2]int64, error) {
	if err := d.Delim('[', k); err != nil {
		return [2]int64{}, err
	}
	cutAt, end := int64(-1), int64(-1)
	assistants := 0
	for i := 0; d.More(); i++ {
		drop := false
		if k == "trajectory" {
			if err := d.Skip(k); err != nil {
				return [2]int64{}, err
			}
			drop = i >= keep
		} else {
			raw, _, err := d.Raw(k)
			if err != nil {
				return [2]int64{}, err
			}
			m := gjson.ParseBytes(raw)
			if m.Get("role").Str == "assistant" && !m.Get("is_demo").Bool() {
				assistants++
				drop = assistants > keep
			}
		}
		if drop && cutAt < 0 {
			if end < 0 {
				return [2]int64{}, trajectory.Errorf(0, "the file changed since it was decoded: the %s would be empty", k)
			}
			cutAt = end // the end of the last kept element
		}
		_, end = d.Span()
	}
	if err := d.Delim(']', k); err != nil {
		return [2]int64{}, err
	}
	if cutAt < 0 {
		return [2]int64{end, end}, nil
	}
	return [2]int64{cutAt, end}, nil
}
