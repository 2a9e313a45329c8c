package agents

import (
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/claude"
	"github.com/pvisor/pvisor/trajectory/codex"
	"github.com/pvisor/pvisor/trajectory/opencode"
	"github.com/pvisor/pvisor/trajectory/pi"
	"github.com/pvisor/pvisor/trajectory/session"
)

// stores are the agents whose sessions can be located, rewritten and
// captured by id. OpenCode keeps its sessions in SQLite (export/import is
// its portable route), so only its export documents can be rewritten.
var stores = []session.Store{claude.Sessions(), codex.Sessions(), pi.Sessions()}

// Sessions returns the session store of agent name ("pi-agent" is pi).
func Sessions(name string) (session.Store, bool) { return byAgent(stores, name) }

// resumable are the agents pvisor resume and fork can restore: every
// store, and OpenCode through export documents its CLI imports.
var resumable = []session.Store{claude.Sessions(), codex.Sessions(), pi.Sessions(), opencode.Bundled()}

// Resumable returns the store resume and fork restore agent name's
// sessions from.
func Resumable(name string) (session.Store, bool) { return byAgent(resumable, name) }

// rewriters are the agents whose session files Rewriter can move to
// another cwd: every store, and OpenCode's export documents.
var rewriters = []session.Rewriter{claude.Sessions(), codex.Sessions(), pi.Sessions(), opencode.Exports()}

// Rewriter returns the cwd rewriter of agent name.
func Rewriter(name string) (session.Rewriter, bool) { return byAgent(rewriters, name) }

// RewriterAgents lists the agents Rewriter knows.
func RewriterAgents() []string { return agentNames(rewriters) }

// SessionAgents lists the agents Sessions knows.
func SessionAgents() []string { return agentNames(stores) }

type named interface{ Agent() string }

func byAgent[T named](list []T, name string) (T, bool) {
	if name == "pi-agent" { // the existing tooling's name for pi
		name = trajectory.Pi
	}
	for _, x := range list {
		if x.Agent() == name {
			return x, true
		}
	}
	var zero T
	return zero, false
}

func agentNames[T named](list []T) []string {
	out := make([]string, len(list))
	for i, x := range list {
		out[i] = x.Agent()
	}
	return out
}
