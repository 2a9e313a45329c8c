// Package fakeagent holds what tests of studies share besides the
// stand-in Codex CLI (a program in replay/e2e/testdata/fakecodex, built
// by the tests): two scripted models, and an upstream that gives every
// run its own scripted server.
package fakeagent

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay"
)

// Two scripted models for studies: Fixer writes the file the verify
// command `grep -q fixed RESULT.txt` looks for, Idler only talks.
const (
	FixerScript = `{"replies": [
  {"text": "Writing the result.", "tool_calls": [{"name": "exec_command", "arguments": {"cmd": "echo fixed > RESULT.txt"}}]},
  {"text": "Done."}
], "final": "Nothing left to do."}`
	IdlerScript = `{"replies": [{"text": "Nothing to change here."}], "final": "Nothing left to do."}`
	// VerifyFixed is the verify command that tells the two apart.
	VerifyFixed = "grep -q fixed RESULT.txt"
)

// PerRun is one model's fake upstream: a scripted server per run (the
// session header the bridge sends upstream), so that every continuation
// gets the script from its first reply, whatever boundary it starts at.
type PerRun struct {
	script  fakemodel.Script
	mu      sync.Mutex
	servers map[string]*fakemodel.Server
}

// NewPerRun parses a script for a PerRun upstream.
func NewPerRun(script string) (*PerRun, error) {
	s, err := fakemodel.ParseScript([]byte(script))
	if err != nil {
		return nil, err
	}
	return &PerRun{script: s, servers: map[string]*fakemodel.Server{}}, nil
}

func (p *PerRun) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(replay.RouterSessionHeader)
	p.mu.Lock()
	srv := p.servers[id]
	if srv == nil {
		srv = fakemodel.New(p.script)
		p.servers[id] = srv
	}
	p.mu.Unlock()
	srv.ServeHTTP(w, r)
}

// BuildCodex builds the stand-in Codex CLI into dst with the go command,
// from the module at root.
func BuildCodex(root, dst string) error {
	cmd := exec.Command("go", "build", "-o", dst, "./replay/e2e/testdata/fakecodex")
	cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the stand-in codex: %v\n%s", err, out)
	}
	return nil
}
