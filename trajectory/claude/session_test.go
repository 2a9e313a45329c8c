package claude

import (
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/trajectory/formattest"
	"github.com/pvisor/pvisor/trajectory/session/sessiontest"
)

var sessionRecordings = []string{
	"../../testdata/e2e/sessions/claude-code@2.1.197/f9e29015-359f-468e-9234-c47d4a21150a.jsonl",
	"../../testdata/e2e/sessions/claude-code@2.1.332/d0465159-22d9-4f2c-b1b3-3d55774e8b6c.jsonl",
}

func TestSessionRecordings(t *testing.T) {
	sessiontest.Recordings(t, Sessions(), sessionRecordings, ProjectKey, func(t *testing.T, name, got string) {
		formattest.Golden(t, filepath.Join("testdata", "golden", "session-rewrite_"+name+".txt"), got)
	})
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
		sessiontest.WriteFile(t, filepath.Join(root, key, p), []byte("{}\n"))
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
