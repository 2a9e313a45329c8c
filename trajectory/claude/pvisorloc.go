package claude

import (
	"fmt"
	"io"

	"github.com/pvisor/pvisor/trajectory"
)

// PvisorLocators implements trajectory.PvisorLocated: pVisor names a
// Claude Code step by the 0-based line of its first assistant entry
// ("event:3").
func (*Format) PvisorLocators(_ io.ReaderAt, _ int64, t *trajectory.Trajectory, afterStep int) ([]string, error) {
	return trajectory.StepLocators(t, afterStep, func(l trajectory.Locator) string { return fmt.Sprintf("event:%d", l.First-1) }), nil
}
