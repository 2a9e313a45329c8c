package pyrunner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/replay/launch/pyrunner/pyrunnertest"
)

// The interpreter of a venv's script is found through a symlink to it.
func TestVenvPython(t *testing.T) {
	entry := pyrunnertest.FakeVenv(t, "mini", "mini-swe-agent 2.4.6")
	link := filepath.Join(t.TempDir(), "mini")
	os.Symlink(entry, link)
	py, err := VenvPython(link)
	if err != nil || py != filepath.Join(filepath.Dir(entry), "python") {
		t.Errorf("VenvPython(link) = %q, %v", py, err)
	}
	if _, err := VenvPython(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing entrypoint has a python")
	}
}
