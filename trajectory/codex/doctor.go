package codex

import (
	"embed"
	"io/fs"
)

//go:embed doctor
var doctorFiles embed.FS

// doctorRecording is the session pvisor doctor continues with the installed
// CLI: one a tested release recorded against the fake model (a copy of
// testdata/e2e/sessions/<agent>@<release>), its manifest and initial
// repository.
func doctorRecording() fs.FS {
	sub, err := fs.Sub(doctorFiles, "doctor")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	return sub
}
