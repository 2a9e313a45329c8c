package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// notSessions are sample files that no agent's format claims, on purpose.
var notSessions = map[string]string{
	"agentsessions_claude_subagent_0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f__subagents__agent-a0ad4f44468bdf20d.meta.json": "a subagent's metadata sidecar, not a transcript",
}

// Every bundled sample is claimed by exactly the agent whose folder it is
// in, and by no other.
func TestDetectEveryBundledSample(t *testing.T) {
	dirs, err := os.ReadDir("../../testdata/trajectories")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		agent := d.Name()
		if _, ok := Lookup(agent); !ok {
			t.Errorf("testdata folder %s is not an agent name", agent)
			continue
		}
		files, _ := os.ReadDir(filepath.Join("../../testdata/trajectories", agent))
		for _, f := range files {
			name := f.Name()
			if f.IsDir() || strings.HasSuffix(name, ".md") || strings.HasSuffix(name, ".py") || strings.HasSuffix(name, ".sh") {
				continue
			}
			path := filepath.Join("../../testdata/trajectories", agent, name)
			want := []string{agent}
			if _, ok := notSessions[name]; ok {
				want = nil
			}
			fh, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			head, _ := Head(fh)
			fh.Close()
			if d := cmp.Diff(want, Matching(head)); d != "" {
				t.Errorf("%s/%s: agents claiming it (-want +got):\n%s", agent, name, d)
			}
			n++
		}
	}
	if n < 40 {
		t.Errorf("only %d samples checked; the bundled corpus is missing", n)
	}
}

func TestDetectRefusesUnknownAndAmbiguous(t *testing.T) {
	dir := t.TempDir()
	unknown := filepath.Join(dir, "notes.txt")
	os.WriteFile(unknown, []byte("hello\n"), 0o644)
	_, err := Detect(unknown)
	if err == nil || !strings.Contains(err.Error(), "tried claude-code, codex, opencode, pi, openhands, mini-swe-agent") {
		t.Errorf("unknown file: %v", err)
	}
	// No two bundled formats claim one real file (checked above), so the
	// ambiguous message is checked on its own.
	amb := (&DetectError{Path: "f.jsonl", Matched: []string{"pi", "opencode"}}).Error()
	if want := "f.jsonl: ambiguous, looks like pi and opencode; pass --agent to choose"; amb != want {
		t.Errorf("ambiguous message %q, want %q", amb, want)
	}
}
