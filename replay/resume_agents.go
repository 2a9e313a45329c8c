package replay

import (
	"sort"
	"syscall"

	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/agents"
)

type (
	resumeSpec    = launch.Resume
	resumeCall    = launch.ResumeCall
	resumeCommand = launch.ResumeCommand
)

// resumeSpecs are the agents pvisor resume and fork support: file-backed
// sessions with native resume and fork flags (reference/capture.md §5.4).
var resumeSpecs = map[string]resumeSpec{
	trajectory.OpenCode: {Command: opencodeResume, SessionID: launch.StreamID("type", "step_start", "sessionID"), Text: opencodeText,
		Collect: opencodeCollect, Export: opencodeExport, Stop: syscall.SIGINT, Grace: opencodeStopGrace},
}

// resumeSpecOf is how agent's CLI resumes and forks.
func resumeSpecOf(agent string) (resumeSpec, bool) {
	agent = agents.Canonical(agent)
	if spec, ok := resumeSpecs[agent]; ok {
		return spec, true
	}
	if a, ok := agents.Get(agent); ok && a.Resume != nil {
		return *a.Resume, true
	}
	return resumeSpec{}, false
}

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
func (r *sessionRun) launcher() Launcher {
	l, _ := launcherOf(r.store.Agent())
	return l
}
