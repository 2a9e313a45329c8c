package sweagent

import (
	"fmt"
	"io"

	"github.com/pvisor/pvisor/trajectory"
)

// PvisorLocators implements trajectory.PvisorLocated: pVisor names a
// SWE-agent step by its trajectory entry ("trajectory:0").
func (format) PvisorLocators(_ io.ReaderAt, _ int64, t *trajectory.Trajectory, afterStep int) ([]string, error) {
	var out []string
	for _, a := range t.Steps() {
		if a.Step > afterStep {
			break
		}
		out = append(out, fmt.Sprintf("trajectory:%d", a.Locator.First))
	}
	return out, nil
}
