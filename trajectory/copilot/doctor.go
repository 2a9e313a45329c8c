package copilot

import (
	"embed"
	"io/fs"
)

//go:embed doctor
var doctorFiles embed.FS

// doctorRecording is the session pvisor doctor continues with the installed
// CLI: a copy of testdata/e2e/sessions/copilot@1.0.102 (its events.jsonl,
// manifest and initial repository), the only release tested so far.
func doctorRecording() fs.FS {
	sub, err := fs.Sub(doctorFiles, "doctor")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	return sub
}
