//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"testing"
)

// TestMain gives the whole suite a HOME of its own, empty: the agents'
// login shells and the replayed tools' `bash -lc` then read no developer
// login files. Root's ~/.bashrc on the CI image runs `pyenv rehash`, and two
// of those in parallel race on pyenv's shims directory ("pyenv: cannot
// rehash … isn't writable" in a replayed observation), or leave its lock
// behind; the sessions were recorded with an empty HOME as well.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "pvisor-e2e-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Setenv("HOME", home)
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}
