package batch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/replay"
)

const oneStep = `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s1","version":"2.1.7","cwd":"/w","message":{"role":"user","content":"go"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s1","version":"2.1.7","cwd":"/w","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}
{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s1","version":"2.1.7","cwd":"/w","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"}]}}
`

func boundSpec(dir string, repeats int, pattern string) *Spec {
	return &Spec{File: filepath.Join(dir, "study.toml"), OutputDir: filepath.Join(dir, "out"), Entries: []Entry{{
		Pos: "study.toml:7", Request: replay.Request{Agent: "claude-code", Mode: replay.PrepareOnly, Upstream: "recorded"},
		Trajectories: []string{pattern}, Steps: Steps{List: []int{1}}, Repeats: repeats,
	}}}
}

// Issue 24 #4: repeats past the bound and a glob of more files than a
// file takes are refused at once, before the expansion is held in memory
// or any match is decoded; at the bound the expansion is made.
func TestExpansionBounds(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "one.jsonl"), []byte(oneStep), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, repeats := range []int{10_000_000, MaxRuns + 1} {
		start := time.Now()
		runs, errs := Expand(boundSpec(dir, repeats, "one.jsonl"))
		if len(runs) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), fmt.Sprintf("expands to at most %d runs", MaxRuns)) {
			t.Fatalf("repeats %d: %d runs, %v", repeats, len(runs), errs)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("repeats %d refused after %v", repeats, d)
		}
	}
	// Two entries that together pass the bound (a lowered one, so the
	// test does not build 100,000 runs).
	defer func(n int) { maxRuns = n }(maxRuns)
	maxRuns = 10
	spec := boundSpec(dir, 6, "one.jsonl")
	spec.Entries = append(spec.Entries, spec.Entries[0])
	spec.Entries[1].Request.MaxSteps = 9 // another run id
	if runs, errs := Expand(spec); runs != nil || len(errs) != 1 || !strings.Contains(errs[0].Error(), "brings it past that") {
		t.Fatalf("two entries past the bound: %d runs, %v", len(runs), errs)
	}

	many := filepath.Join(dir, "many")
	if err := os.Mkdir(many, 0o700); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { maxTrajectories = n }(maxTrajectories)
	maxTrajectories = 50
	for i := range maxTrajectories + 1 {
		// Not a session at all: decoding any of them would be an error.
		if err := os.WriteFile(filepath.Join(many, fmt.Sprintf("%05d.jsonl", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	runs, errs := Expand(boundSpec(dir, 1, "many/*.jsonl"))
	if runs, errs := Expand(boundSpec(dir, 1, "many/0000*.jsonl")); len(runs) != 0 || len(errs) != 10 || !strings.Contains(errs[0].Error(), "not a claude-code session") {
		t.Fatalf("under the bound every match is decoded: %d runs, %v", len(runs), errs)
	}
	if len(runs) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), fmt.Sprintf("matches %d files", maxTrajectories+1)) {
		t.Fatalf("a glob of %d files: %d runs, %v", maxTrajectories+1, len(runs), errs)
	}
}
