package sweagent

import (
	"fmt"
	"io"

	"github.com/pvisor/pvisor/trajectory"
)

// PvisorLocators implements trajectory.PvisorLocated: pVisor names a
// SWE-agent step by its trajectory entry ("trajectory:0").
func (format) PvisorLocators(_ io.ReaderAt, _ int64, t *trajectory.Trajectory, afterStep int) ([]string, error) {
	return trajectory.StepLocators(t, afterStep, func(l trajectory.Locator) string { return fmt.Sprintf("trajectory:%d", l.First) }), nil
}
