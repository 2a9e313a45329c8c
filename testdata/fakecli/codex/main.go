// Command codex is fakeagent.Codex as a program, for tests that run the
// stand-in CLI outside a Go test binary (the Slurm e2e builds it).
package main

import (
	"os"

	"github.com/pvisor/pvisor/replay/fakeagent"
)

func main() { os.Exit(fakeagent.Codex(os.Args[1:], os.Stdout, os.Stderr)) }
