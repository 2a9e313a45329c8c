package claude

import (
	"encoding/json"
	"strings"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/replay/launch"
	pvresult "github.com/pvisor/pvisor/result"
)

// AgentName is the name users give the agent on the command line.
const AgentName = "claude-code"

// Agent is Claude Code as pvisor's engine, capture, resume and CLI see it.
func Agent() launch.Agent {
	return launch.Agent{
		Format:    New(),
		Launcher:  launcher{},
		Sessions:  Sessions(),
		Resumable: Sessions(),
		Rewriter:  Sessions(),
		Doctor:    launch.Sub(doctorFiles, "doctor"),
		Resume:    &resume,
		Native:    launch.NativeLayout{Label: "claude-code", Names: [3]string{"prepared-prefix", "reconstructed-prefix", "continued-session"}},
	}
}

// DenyTools is pVisor's --agent-disallowed-tool for Claude Code.
func (launcher) DenyTools(names []string) []string {
	return []string{"--disallowedTools", strings.Join(names, ",")}
}

// DisableThinking is pVisor's --disable-thinking for Claude Code, defined
// for an OpenAI-compatible upstream only: the bridge translates its
// Anthropic requests there, and turns thinking off with these body fields.
func (launcher) DisableThinking(proto bridge.Protocol, _ []string) (launch.ThinkingOff, error) {
	if proto != bridge.Chat {
		return launch.ThinkingOff{}, pvresult.Fail(pvresult.ConfigurationError, "--disable-thinking for claude-code is defined for an OpenAI-compatible upstream (chat_template_kwargs, reasoning_effort), as pVisor's bridge does; use --upstream openai-chat, or drop the flag for %s", proto)
	}
	return launch.ThinkingOff{Effect: "chat_template_kwargs.enable_thinking=false, reasoning_effort=none",
		Fields: map[string]json.RawMessage{"chat_template_kwargs": json.RawMessage(`{"enable_thinking":false}`), "reasoning_effort": json.RawMessage(`"none"`)}}, nil
}
