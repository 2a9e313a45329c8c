package replay

import (
	"encoding/json"
	"slices"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/trajectory"
)

// thinkingOff is how --disable-thinking applies to one continuation, as
// pVisor maps it (reference pvisor.md §5.1): body fields the bridge adds to
// every forwarded request, native arguments for the CLI, and what to record.
type thinkingOff struct {
	fields map[string]json.RawMessage
	args   []string
	effect string
}

var (
	noThinkingKwargs = json.RawMessage(`{"enable_thinking":false}`)
	noReasoning      = json.RawMessage(`"none"`)
)

// disableThinking maps --disable-thinking for agent continuing through an
// upstream speaking proto ("" for the recorded upstream, which has no model
// to tell). An error is a combination pVisor does not define.
func (r *run) disableThinking(agent string, proto bridge.Protocol) (thinkingOff, error) {
	if !r.req.DisableThinking {
		return thinkingOff{}, nil
	}
	switch {
	case proto == "":
		return thinkingOff{effect: "none: the recorded upstream has no model"}, nil
	case agent == trajectory.ClaudeCode && proto == bridge.Chat:
		return thinkingOff{effect: "chat_template_kwargs.enable_thinking=false, reasoning_effort=none",
			fields: map[string]json.RawMessage{"chat_template_kwargs": noThinkingKwargs, "reasoning_effort": noReasoning}}, nil
	case agent == trajectory.ClaudeCode:
		return thinkingOff{}, configErr("--disable-thinking for claude-code is defined for an OpenAI-compatible upstream (chat_template_kwargs, reasoning_effort), as pVisor's bridge does; use --upstream openai-chat, or drop the flag for %s", proto)
	case agent == trajectory.OpenCode:
		// pVisor also omits --thinking, which the launcher never passes.
		return thinkingOff{effect: "chat_template_kwargs.enable_thinking=false",
			fields: map[string]json.RawMessage{"chat_template_kwargs": noThinkingKwargs}}, nil
	case agent == trajectory.Pi:
		if slices.Contains(r.req.AgentArgs, "--thinking") {
			return thinkingOff{}, configErr("--disable-thinking passes pi --thinking off; remove the --agent-arg --thinking that contradicts it")
		}
		return thinkingOff{effect: "pi --thinking off", args: []string{"--thinking", "off"}}, nil
	}
	return thinkingOff{effect: "none: pVisor maps --disable-thinking to nothing for " + agent}, nil
}
