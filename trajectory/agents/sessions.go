package agents

import (
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/trajectory/session"
)

// Sessions returns the session store of agent name: the agents whose
// sessions can be located, rewritten and captured by id.
func Sessions(name string) (session.Store, bool) {
	a, ok := Get(name)
	return a.Sessions, ok && a.Sessions != nil
}

// Resumable returns the store resume and fork restore agent name's
// sessions from (for OpenCode, which keeps its sessions in SQLite, export
// documents its CLI imports).
func Resumable(name string) (session.Store, bool) {
	a, ok := Get(name)
	return a.Resumable, ok && a.Resumable != nil
}

// Rewriter returns the cwd rewriter of agent name.
func Rewriter(name string) (session.Rewriter, bool) {
	a, ok := Get(name)
	return a.Rewriter, ok && a.Rewriter != nil
}

// RewriterAgents lists the agents Rewriter knows.
func RewriterAgents() []string {
	return namesWith(func(a launch.Agent) bool { return a.Rewriter != nil })
}

// SessionAgents lists the agents Sessions knows.
func SessionAgents() []string {
	return namesWith(func(a launch.Agent) bool { return a.Sessions != nil })
}

func namesWith(has func(launch.Agent) bool) []string {
	var out []string
	for _, a := range registry {
		if has(a) {
			out = append(out, a.Name())
		}
	}
	return out
}
