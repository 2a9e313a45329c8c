package kimi

import "github.com/pvisor/pvisor/replay/launch"

// AgentName is the name users give the agent on the command line.
const AgentName = "kimi"

// Agent is Kimi Code as pvisor's engine and CLI see it: for now its
// format alone (inspect, --prepare-only).
func Agent() launch.Agent {
	return launch.Agent{
		Format:  New(),
		Aliases: []string{"kimi-code"},
	}
}
