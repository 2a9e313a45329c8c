package kimi

import "github.com/pvisor/pvisor/replay/launch"

// AgentName is the name users give the agent on the command line.
const AgentName = "kimi"

// Agent is Kimi Code as pvisor's engine and CLI see it: its format
// (inspect, --prepare-only, --replay-only) and launcher (continuation).
// The session store, resume and fork are not built yet.
func Agent() launch.Agent {
	return launch.Agent{
		Format:   New(),
		Aliases:  []string{"kimi-code"},
		Launcher: launcher{},
	}
}
