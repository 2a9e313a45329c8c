package resume

import (
	"sort"

	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/trajectory/agents"
)

type (
	resumeSpec    = launch.Resume
	resumeCall    = launch.ResumeCall
	resumeCommand = launch.ResumeCommand
)

// resumeSpecOf is how agent's CLI resumes and forks a restored session with
// its native flags (reference/capture.md §5.4), from the agent's folder.
func resumeSpecOf(agent string) (resumeSpec, bool) {
	agent = agents.Canonical(agent)
	if a, ok := agents.Get(agent); ok && a.Resume != nil {
		return *a.Resume, true
	}
	return resumeSpec{}, false
}

// ResumeAgents names the agents pvisor resume and fork support.
func ResumeAgents() []string { return resumeAgents() }

// resumeAgents names the agents pvisor resume and fork support.
func resumeAgents() []string {
	var out []string
	for _, a := range agents.Names() {
		if _, ok := resumeSpecOf(a); ok {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

// launcher is the launcher of the session's agent: its binary and protocol
// serve resume and fork too (every resumable agent has one).
func (r *sessionRun) launcher() launch.Launcher {
	l, _ := launcherOf(r.store.Agent())
	return l
}
