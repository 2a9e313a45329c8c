package kimi

import (
	"embed"
	"io/fs"

	"github.com/pvisor/pvisor/replay/launch"
)

//go:embed doctor
var doctorFiles embed.FS

// doctorRecording is the session pvisor doctor continues with the installed
// CLI: a copy of testdata/e2e/sessions/kimi@2.1.0 (the wire log Kimi Code
// 2.1.0 wrote against the fake model in a loopback-only namespace, its
// manifest and initial repository), the only release tested so far.
func doctorRecording() fs.FS { return launch.Sub(doctorFiles, "doctor") }
