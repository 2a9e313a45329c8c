package codex

import (
	"os"
	"testing"
)

// TestMain runs the replayed `bash -lc` commands with an empty HOME: a
// developer's login files (root's ~/.bashrc on the CI image runs `pyenv
// rehash`, which races with other packages' shells) must not reach the
// observations the tests compare.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "pvisor-codex-test-home-")
	if err == nil {
		os.Setenv("HOME", home)
	}
	code := m.Run()
	if err == nil {
		os.RemoveAll(home)
	}
	os.Exit(code)
}
