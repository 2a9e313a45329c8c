package opencode

import "embed"

// doctorFiles holds the session pvisor doctor continues with the installed
// CLI: one a tested release recorded against the fake model (a copy of
// testdata/e2e/sessions/<agent>@<release>), its manifest and initial
// repository.
//
//go:embed doctor
var doctorFiles embed.FS
