package miniswe

import (
	"fmt"
	"io"

	"github.com/pvisor/pvisor/trajectory"
)

// PvisorLocators implements trajectory.PvisorLocated: pVisor names a
// mini-swe-agent step by the index of its assistant message ("messages:2").
func (format) PvisorLocators(_ io.ReaderAt, _ int64, t *trajectory.Trajectory, afterStep int) ([]string, error) {
	return trajectory.StepLocators(t, afterStep, func(l trajectory.Locator) string { return fmt.Sprintf("messages:%d", l.First) }), nil
}
