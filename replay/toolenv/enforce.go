package toolenv

import (
	"fmt"

	toolrun "github.com/pvisor/pvisor/run"
)

// Enforce turns iso into --policy enforce's: shell tools may write only
// the workspace (as the tools see it), their runner's temp dir and the
// usual devices. Landlock is applied by the isolated tool init, so without
// isolation nothing could deny a shell's writes: refused, with the reason.
func (t *Tools) Enforce(iso toolrun.Isolation, workspace string) (toolrun.Isolation, error) {
	if !iso.Enabled {
		why, _ := t.meta["tool_isolation"].(map[string]any)["missing"].(string)
		return iso, configErr("--policy enforce needs tool isolation (Landlock is applied by the isolated tool init), which is off: %s; run as root where namespaces are allowed, or use --policy observe", why)
	}
	if _, err := toolrun.LandlockABI(); err != nil {
		return iso, configErr("--policy enforce: %v; use --policy observe", err)
	}
	iso.WriteRoots = toolrun.WriteRootsFor(workspace)
	return iso, nil
}

// DeniedNote is the result's reason for writes the policy refused.
func DeniedNote(n int, workspace string) string {
	return fmt.Sprintf("--policy enforce denied %d file tool write(s) outside the workspace %s (see writes_denied; shell tools' denied writes are in their observations)", n, workspace)
}
