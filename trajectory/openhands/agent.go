package openhands

import "github.com/pvisor/pvisor/replay/launch"

// AgentName is the name users give the agent on the command line.
const AgentName = "openhands"

// Agent is OpenHands as pvisor's engine and CLI see it.
func Agent() launch.Agent {
	return launch.Agent{
		Format:   New(),
		Launcher: launcher{},
		Native: launch.NativeLayout{Label: "openhands",
			Names: [3]string{"prepared-replay-events", "reconstructed-trajectory", "continued-trajectory"}},
	}
}
