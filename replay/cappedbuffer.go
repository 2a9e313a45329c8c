package replay

import (
	"context"
	"fmt"

	"github.com/pvisor/pvisor/replay/agentcli"
	"github.com/pvisor/pvisor/replay/launch"
)

// CappedBuffer is launch's: output kept up to a limit.
type CappedBuffer = launch.CappedBuffer

// ProbeAgentVersion asks entry which release of agent's CLI it is, the way
// a continuation does; see agentcli.Probe. It is for choosing among
// recordings (the doctor, batch checks); the run itself probes again.
func ProbeAgentVersion(ctx context.Context, agent, entry, dir string, offline bool) (string, error) {
	l, ok := launcherOf(agent)
	if !ok {
		return "", fmt.Errorf("pvisor does not continue %s", agent)
	}
	return agentcli.Probe(ctx, l, agent, entry, dir, offline)
}
