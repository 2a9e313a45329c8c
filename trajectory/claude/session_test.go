package claude

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/trajectory/formattest"
	"github.com/pvisor/pvisor/trajectory/session/sessiontest"
)

var sessionRecordings = []string{
	"../../testdata/e2e/sessions/claude-code@2.1.197/f9e29015-359f-468e-9234-c47d4a21150a.jsonl",
	"../../testdata/e2e/sessions/claude-code@2.1.332/d0465159-22d9-4f2c-b1b3-3d55774e8b6c.jsonl",
}

func TestSessionRewrite(t *testing.T) {
	for _, path := range sessionRecordings {
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			golden := filepath.Join("testdata", "golden", "session-rewrite_"+filepath.Base(filepath.Dir(path))+".txt")
			formattest.Golden(t, golden, sessiontest.Rewrite(t, Sessions(), path))
		})
	}
}

func TestSessionLocateRecorded(t *testing.T) {
	for _, path := range sessionRecordings {
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			_, loc := sessiontest.Recorded(t, Sessions(), filepath.Dir(path))
			// The real CLI named the project directory as ProjectKey does.
			if got, want := filepath.Base(filepath.Dir(loc.Main)), ProjectKey("/tmp/pvisor-e2e/claude-code/repo"); got != want {
				t.Errorf("project directory %s, ProjectKey gives %s", got, want)
			}
		})
	}
}

func TestSessionLocate(t *testing.T) {
	sessiontest.Locate(t, Sessions(), func(id string, variant int) string {
		return filepath.Join("projects", []string{"-w-repo", "-tmp-other"}[variant], id+".jsonl")
	})
}

func TestSessionLocateSubagents(t *testing.T) {
	root := t.TempDir()
	const id = "d0465159-22d9-4f2c-b1b3-3d55774e8b6c"
	key := filepath.Join("projects", "-w-repo")
	for _, p := range []string{
		id + ".jsonl",
		id + "/subagents/agent-a1.jsonl",
		id + "/subagents/nested/agent-b2.jsonl",
		id + "/subagents/notes.txt",      // not a transcript
		"other/subagents/agent-c3.jsonl", // another session's
	} {
		sessiontestWrite(t, filepath.Join(root, key, p))
	}
	loc, err := Sessions().Locate(root, id)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(key, id, "subagents", "agent-a1.jsonl"),
		filepath.Join(key, id, "subagents", "nested", "agent-b2.jsonl"),
	}
	if len(loc.Sidecars) != 2 || loc.Sidecars[0] != want[0] || loc.Sidecars[1] != want[1] {
		t.Errorf("sidecars = %q, want %q", loc.Sidecars, want)
	}
}

func TestSessionRoot(t *testing.T) {
	env := map[string]string{"HOME": "/home/u", "CLAUDE_CONFIG_DIR": "/cfg"}
	getenv := func(k string) string { return env[k] }
	for _, tt := range []struct{ home, want string }{
		{"", "/cfg"},
		{"/sandbox/home", "/sandbox/home/.claude"}, // --home wins over the environment
	} {
		if got, err := Sessions().Root(tt.home, getenv); err != nil || got != tt.want {
			t.Errorf("Root(%q) = %q, %v; want %q", tt.home, got, err, tt.want)
		}
	}
	delete(env, "CLAUDE_CONFIG_DIR")
	if got, _ := Sessions().Root("", getenv); got != "/home/u/.claude" {
		t.Errorf("Root without CLAUDE_CONFIG_DIR = %q", got)
	}
}

func sessiontestWrite(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
