package agents

import (
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/claude"
	"github.com/pvisor/pvisor/trajectory/codex"
	"github.com/pvisor/pvisor/trajectory/pi"
	"github.com/pvisor/pvisor/trajectory/session"
)

// stores are the agents whose sessions can be located, rewritten and
// captured by id. OpenCode keeps its sessions in SQLite (export/import is
// its portable route) and is not here yet.
var stores = []session.Store{claude.Sessions(), codex.Sessions(), pi.Sessions()}

// Sessions returns the session store of agent name ("pi-agent" is pi).
func Sessions(name string) (session.Store, bool) {
	if name == "pi-agent" {
		name = trajectory.Pi
	}
	for _, s := range stores {
		if s.Agent() == name {
			return s, true
		}
	}
	return nil, false
}

// SessionAgents lists the agents Sessions knows.
func SessionAgents() []string {
	out := make([]string, len(stores))
	for i, s := range stores {
		out[i] = s.Agent()
	}
	return out
}
