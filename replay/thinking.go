package replay

import (
	"encoding/json"
	"strings"

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

// Body fields pVisor's bridge adds for --disable-thinking.
var (
	noThinkingKwargs = json.RawMessage(`{"enable_thinking":false}`)
	noReasoning      = json.RawMessage(`"none"`)
)

// DisableThinking: claude-code through an OpenAI-compatible upstream only.
func (claudeLauncher) DisableThinking(proto bridge.Protocol, _ []string) (launch.ThinkingOff, error) {
	if proto != bridge.Chat {
		return launch.ThinkingOff{}, configErr("--disable-thinking for claude-code is defined for an OpenAI-compatible upstream (chat_template_kwargs, reasoning_effort), as pVisor's bridge does; use --upstream openai-chat, or drop the flag for %s", proto)
	}
	return launch.ThinkingOff{Effect: "chat_template_kwargs.enable_thinking=false, reasoning_effort=none",
		Fields: map[string]json.RawMessage{"chat_template_kwargs": noThinkingKwargs, "reasoning_effort": noReasoning}}, nil
}

// DisallowedToolsArgs: pVisor passes --agent-disallowed-tool to claude-code
// as --disallowedTools with the names joined by commas.
func (claudeLauncher) DisallowedToolsArgs(tools []string) []string {
	return []string{"--disallowedTools", strings.Join(tools, ",")}
}
