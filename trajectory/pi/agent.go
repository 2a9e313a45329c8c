package pi

import (
	"slices"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/replay/launch"
	pvresult "github.com/pvisor/pvisor/result"
)

// AgentName is the name users give the agent on the command line.
const AgentName = "pi"

// Agent is Pi as pvisor's engine, capture, resume and CLI see it. The
// existing tooling calls it "pi-agent".
func Agent() launch.Agent {
	return launch.Agent{
		Format:    New(),
		Aliases:   []string{"pi-agent"},
		Launcher:  launcher{},
		Sessions:  Sessions(),
		Resumable: Sessions(),
		Rewriter:  Sessions(),
		Resume:    &resume,
		Doctor:    launch.Sub(doctorFiles, "doctor"),
		Native: launch.NativeLayout{
			Label: "pi-agent",
			Names: [3]string{"prepared-prefix", "reconstructed-events", "continued-events"},
			// A session file is typed native-session-jsonl: pVisor's
			// native-events-jsonl would tell a reader to parse it as a
			// --mode json stream, which it is not.
			Kind: func(subFormat, _ string) string {
				if subFormat == SubFormatEvents {
					return "events-jsonl"
				}
				return "session-jsonl"
			},
		},
	}
}

// DisableThinking is pVisor's --disable-thinking for Pi: --thinking off.
func (launcher) DisableThinking(_ bridge.Protocol, agentArgs []string) (launch.ThinkingOff, error) {
	if slices.Contains(agentArgs, "--thinking") {
		return launch.ThinkingOff{}, pvresult.Fail(pvresult.ConfigurationError, "--disable-thinking passes pi --thinking off; remove the --agent-arg --thinking that contradicts it")
	}
	return launch.ThinkingOff{Effect: "pi --thinking off", Args: []string{"--thinking", "off"}}, nil
}
