package main

import (
	"os"

	"github.com/pvisor/pvisor/replay/fakeagent"
)

// fakeCodexEnv makes the test binary play the Codex CLI (fakeagent.Codex)
// for the study test, through a wrapper script that sets it.
const fakeCodexEnv = "PVISOR_TEST_FAKE_CODEX"

func fakeCodex() int { return fakeagent.Codex(os.Args[1:], os.Stdout, os.Stderr) }
