package miniswe

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/pvisor/pvisor/trajectory"
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

	d := newDoc(io.NewSectionReader(src, 0, size))
	tok, err := d.dec.Token()
	if err != nil {
		return d.fail(err, "start of file")
	}
	if tok == json.Delim('{') {
		if err := seekMessages(d); err != nil {
			return err
		}
	} else if tok != json.Delim('[') {
		return trajectory.Errorf(1, "expected a mini-swe-agent trajectory, found %s", tokenKind(tok))
	}
	keep, end := int64(-1), int64(-1)
	for i := 0; d.dec.More(); i++ {
		if _, _, _, err := d.raw("messages"); err != nil {
			return err
		}
		end = d.dec.InputOffset()
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

// seekMessages moves d to just inside the messages array.
func seekMessages(d *doc) error {
	for d.dec.More() {
		k, err := d.key("trajectory")
		if err != nil {
			return err
		}
		if k == "messages" {
			return d.delim('[', "messages")
		}
		if _, _, _, err := d.raw(k); err != nil {
			return err
		}
	}
	return trajectory.Errorf(1, "the trajectory has no \"messages\"")
}
