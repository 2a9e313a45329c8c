// Package pyrunnertest lays out fake Python venvs for the tests of agents
// continued through a runner (and of the engine that launches them).
package pyrunnertest

import (
	"os"
	"path/filepath"
	"testing"
)

// FakeVenv lays out venv/bin/<script>, a script whose shebang names a
// "python" next to it that prints printed: what the launcher's version
// probe asks the package. It returns the script's path.
func FakeVenv(t testing.TB, script, printed string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "venv", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	py := filepath.Join(bin, "python")
	if err := os.WriteFile(py, []byte("#!/bin/sh\necho "+printed+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(bin, script)
	if err := os.WriteFile(entry, []byte("#!"+py+"\nimport sys\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return entry
}
