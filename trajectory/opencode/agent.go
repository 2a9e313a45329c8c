package opencode

import "github.com/pvisor/pvisor/replay/launch"

// AgentName is the name users give the agent on the command line.
const AgentName = "opencode"

// Agent is OpenCode as pvisor's engine, capture, resume and CLI see it.
// Its sessions live in SQLite (Database): they are captured and resumed as
// export documents, which its CLI imports.
func Agent() launch.Agent {
	return launch.Agent{
		Format:    New(),
		Launcher:  launcher{},
		Resumable: Bundled(),
		Rewriter:  Exports(),
		Doctor:    launch.Sub(doctorFiles, "doctor"),
		Database:  Database(),
		Resume:    &resume,
		Native: launch.NativeLayout{
			Label: "opencode",
			Names: [3]string{"prepared-prefix", "reconstructed-trajectory", "continued-trajectory"},
			Kind:  func(_, _ string) string { return "events-jsonl" },
			// JSON documents are session exports (what `opencode import`
			// loads), named and typed as pVisor's export.
			Export: &launch.ExportDoc{Ext: "json", File: ExportFile, Format: ExportFormat},
		},
	}
}

// ExportFile is where a run puts the rebuilt session export, and
// ExportFormat its format string, as pVisor names them.
const (
	ExportFile   = "opencode-session.json"
	ExportFormat = "opencode/session-export-v1"
)
