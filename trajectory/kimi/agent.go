package kimi

import "github.com/pvisor/pvisor/replay/launch"

// AgentName is the name users give the agent on the command line.
const AgentName = "kimi"

// Agent is Kimi Code as pvisor's engine and CLI see it: its format
// (inspect, --prepare-only, --replay-only), launcher (continuation), its
// session store (the session_<uuid>/ directory: locate, show, rewrite,
// capture), resume and native fork, and the recording pvisor doctor
// continues.
func Agent() launch.Agent {
	return launch.Agent{
		Format:    New(),
		Aliases:   []string{"kimi-code"},
		Launcher:  launcher{},
		Sessions:  Sessions(),
		Resumable: Sessions(),
		Rewriter:  Sessions(),
		Resume:    &resume,
		Doctor:    doctorRecording(),
	}
}
