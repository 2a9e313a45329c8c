package codex

import "github.com/pvisor/pvisor/replay/launch"

// AgentName is the name users give the agent on the command line.
const AgentName = "codex"

// Agent is Codex as pvisor's engine, capture, resume and CLI see it.
func Agent() launch.Agent {
	return launch.Agent{
		Format:    New(),
		Launcher:  launcher{},
		Sessions:  Sessions(),
		Resumable: Sessions(),
		Rewriter:  Sessions(),
		Doctor:    launch.Sub(doctorFiles, "doctor"),
		Resume:    &resume,
		Native:    launch.NativeLayout{Label: "codex", Names: [3]string{"prepared-prefix", "reconstructed-trajectory", "continued-trajectory"}},
	}
}
