package copilot

import "github.com/pvisor/pvisor/replay/launch"

// AgentName is the name users give the agent on the command line.
const AgentName = "copilot"

// Agent is GitHub Copilot CLI as pvisor sees it: decoded, replayed and
// continued. Its session is a directory (session-state/<id>/); pvisor reads
// its events.jsonl, the only file the model-visible history lives in.
func Agent() launch.Agent {
	return launch.Agent{
		Format:    New(),
		Launcher:  launcher{},
		Sessions:  Sessions(),
		Resumable: Sessions(),
		Rewriter:  Sessions(),
		Resume:    &resume,
		Doctor:    doctorRecording(),
		Native: launch.NativeLayout{Label: "copilot",
			Names: [3]string{"prepared-prefix", "reconstructed-events", "continued-events"},
			Kind:  func(string, string) string { return "events-jsonl" }},
	}
}
