package miniswe

import "github.com/pvisor/pvisor/replay/launch"

// AgentName is the name users give the agent on the command line.
const AgentName = "mini-swe-agent"

// Agent is mini-swe-agent as pvisor's engine and CLI see it.
func Agent() launch.Agent {
	return launch.Agent{
		Format:   New(),
		Launcher: launcher{},
		Doctor:   launch.Sub(doctorFiles, "doctor"),
		Native: launch.NativeLayout{Label: "mini-swe-agent",
			Names: [3]string{"prepared-prefix", "reconstructed-trajectory", "continued-trajectory"}},
	}
}
