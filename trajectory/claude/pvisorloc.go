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
	var out []string
	for _, a := range t.Steps() {
		if a.Step > afterStep {
			break
		}
		out = append(out, fmt.Sprintf("event:%d", a.Locator.First-1))
	}
	return out, nil
}
