package replay

import (
	"encoding/json"

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

// The body field pVisor's bridge adds for --disable-thinking.
var noThinkingKwargs = json.RawMessage(`{"enable_thinking":false}`)

// DisableThinking: OpenCode's chat_template_kwargs. pVisor also omits
// --thinking, which the launcher never passes.
func (opencodeLauncher) DisableThinking(bridge.Protocol, []string) (launch.ThinkingOff, error) {
	return launch.ThinkingOff{Effect: "chat_template_kwargs.enable_thinking=false",
		Fields: map[string]json.RawMessage{"chat_template_kwargs": noThinkingKwargs}}, nil
}
