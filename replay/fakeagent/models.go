package fakeagent

import (
	"net/http"
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
