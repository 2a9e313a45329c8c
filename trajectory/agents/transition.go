package agents

import (
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/trajectory/claude"
	"github.com/pvisor/pvisor/trajectory/codex"
)

// claudeAgent and codexAgent are built here until their folders hold
// their envelopes: bridge/envelope imports them, so they cannot import
// replay/launch yet.
func claudeAgent() launch.Agent {
	return launch.Agent{Format: claude.New(), Sessions: claude.Sessions(), Resumable: claude.Sessions(), Rewriter: claude.Sessions(), Doctor: claude.DoctorRecording(),
		Native: launch.NativeLayout{Label: "claude-code", Names: [3]string{"prepared-prefix", "reconstructed-prefix", "continued-session"}}}
}

func codexAgent() launch.Agent {
	return launch.Agent{Format: codex.New(), Sessions: codex.Sessions(), Resumable: codex.Sessions(), Rewriter: codex.Sessions(), Doctor: codex.DoctorRecording(),
		Native: launch.NativeLayout{Label: "codex", Names: [3]string{"prepared-prefix", "reconstructed-trajectory", "continued-trajectory"}}}
}
