package pi

import (
	"fmt"
	"io"

	"github.com/pvisor/pvisor/trajectory"
)

// PvisorLocators implements trajectory.PvisorLocated: pVisor names a Pi
// step by the 0-based line of the record that closes it ("events:20", the
// turn_end of a --mode json turn; for a session file the last toolResult).
func (format) PvisorLocators(_ io.ReaderAt, _ int64, t *trajectory.Trajectory, afterStep int) ([]string, error) {
	return trajectory.StepLocators(t, afterStep, func(l trajectory.Locator) string { return fmt.Sprintf("events:%d", l.Last-1) }), nil
}
