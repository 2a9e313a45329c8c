package sweagent

import "github.com/pvisor/pvisor/replay/launch"

// AgentName is the name users give the agent on the command line.
const AgentName = "swe-agent"

// Agent is SWE-agent as pvisor sees it: replayed, not continued.
func Agent() launch.Agent {
	return launch.Agent{
		Format: New(),
		Native: launch.NativeLayout{Label: "swe-agent",
			Names: [3]string{"prepared-prefix", "reconstructed-trajectory", "continued-trajectory"}},
	}
}
