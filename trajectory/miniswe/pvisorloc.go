package miniswe

import (
	"fmt"
	"io"

	"github.com/pvisor/pvisor/trajectory"
)

// PvisorLocators implements trajectory.PvisorLocated: pVisor names a
// mini-swe-agent step by the index of its assistant message ("messages:2").
func (format) PvisorLocators(_ io.ReaderAt, _ int64, t *trajectory.Trajectory, afterStep int) ([]string, error) {
	var out []string
	for _, a := range t.Steps() {
		if a.Step > afterStep {
			break
		}
		out = append(out, fmt.Sprintf("messages:%d", a.Locator.First))
	}
	return out, nil
}
