package replay

import (
	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/replay/launch"
)

// disableThinking maps --disable-thinking for agent continuing through an
// upstream speaking proto ("" for the recorded upstream, which has no model
// to tell), as pVisor maps it (reference pvisor.md §5.1); the agent's
// launcher knows its mapping. An error is a combination pVisor does not
// define.
func (r *run) disableThinking(agent string, proto bridge.Protocol) (launch.ThinkingOff, error) {
	if !r.req.DisableThinking {
		return launch.ThinkingOff{}, nil
	}
	if proto == "" {
		return launch.ThinkingOff{Effect: "none: the recorded upstream has no model"}, nil
	}
	if l, ok := launcherOf(agent); ok {
		if d, ok := l.(launch.ThinkingDisabler); ok {
			return d.DisableThinking(proto, r.req.AgentArgs)
		}
	}
	return launch.ThinkingOff{Effect: "none: pVisor maps --disable-thinking to nothing for " + agent}, nil
}
