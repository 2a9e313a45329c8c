package copilot

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/trajectory/formattest"
	store "github.com/pvisor/pvisor/trajectory/session"
	"github.com/pvisor/pvisor/trajectory/session/sessiontest"
)

func TestSessionRecordings(t *testing.T) {
	sessiontest.Recordings(t, Sessions(), []string{"../../testdata/e2e/sessions/copilot@1.0.102/events.jsonl"}, nil,
		func(t *testing.T, name, got string) {
			formattest.Golden(t, filepath.Join("testdata", "golden", "session-rewrite_"+name+".txt"), got)
		})
}

// Locate finds the directory by id alone, lists the files that go with it
// (lock files left out, a symlink kept so capture refuses it), and refuses
// ids that could leave the store.
func TestSessionLocate(t *testing.T) {
	root := t.TempDir()
	const id = "6b4d4f01-51fa-42c7-84dc-812d8e9225db"
	dir := filepath.Join(root, "session-state", id)
	for _, f := range []string{"events.jsonl", "workspace.yaml", "checkpoints/index.md", ".workspace-fork.lock"} {
		sessiontest.WriteFile(t, filepath.Join(dir, f), []byte("{}\n"))
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	loc, err := Sessions().Locate(root, id)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"session-state/" + id + "/checkpoints/index.md", "session-state/" + id + "/link", "session-state/" + id + "/workspace.yaml"}
	if loc.Main != filepath.Join("session-state", id, "events.jsonl") || !slices.Equal(loc.Sidecars, want) || loc.SidecarRole != "session_file" {
		t.Errorf("Locate = %+v", loc)
	}
	var nf *store.NotFoundError
	if _, err := Sessions().Locate(root, "01a22998-8d3b-75d5-8d8d-f6601805e7d0"); !errors.As(err, &nf) {
		t.Errorf("unknown id: %v", err)
	}
	var be *store.BadIDError
	for _, bad := range []string{"", "..", "../x", "a/b", "*"} {
		if _, err := Sessions().Locate(root, bad); !errors.As(err, &be) {
			t.Errorf("Locate(%q) = %v, want a BadIDError", bad, err)
		}
	}
}

// A fork copies the restored directory under a new id (the parent left as
// it was), changes the copy's ids, and resumes the copy; both runs point
// workspace.yaml at the workspace.
func TestResumeCommandFork(t *testing.T) {
	root := t.TempDir()
	const id = "6b4d4f01-51fa-42c7-84dc-812d8e9225db"
	src, err := os.ReadFile("../../testdata/e2e/sessions/copilot@1.0.102/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	yaml, _ := os.ReadFile("../../testdata/e2e/sessions/copilot@1.0.102/workspace.yaml")
	dir := filepath.Join(root, "session-state", id)
	sessiontest.WriteFile(t, filepath.Join(dir, "events.jsonl"), src)
	sessiontest.WriteFile(t, filepath.Join(dir, "workspace.yaml"), yaml)
	call := launch.ResumeCall{Fork: true, SID: id, Root: root, Main: filepath.Join(dir, "events.jsonl"), Prompt: "go on",
		Cwd: "/w/new place", Bridge: launch.BridgeAddr{URL: "http://127.0.0.1:9", Token: "tok"}}
	rc, err := resumeCommand(call)
	if err != nil {
		t.Fatal(err)
	}
	if parent, _ := os.ReadFile(filepath.Join(dir, "events.jsonl")); string(parent) != string(src) {
		t.Error("the fork changed the parent's events.jsonl")
	}
	var child string
	for _, a := range rc.Args {
		if v, ok := strings.CutPrefix(a, "--resume="); ok {
			child = v
		}
	}
	if child == "" || child == id || !uuidRe().MatchString(child) {
		t.Fatalf("args = %q", rc.Args)
	}
	ev, _ := os.ReadFile(filepath.Join(root, "session-state", child, "events.jsonl"))
	if got := gjson.GetBytes(launch.FirstLine(ev), "data.sessionId").Str; got != child {
		t.Errorf("the copy's session.start names %q", got)
	}
	y, _ := os.ReadFile(filepath.Join(root, "session-state", child, "workspace.yaml"))
	if !strings.HasPrefix(string(y), "id: "+child+"\ncwd: \"/w/new place\"\ngit_root: \"/w/new place\"\nbranch: main\n") {
		t.Errorf("the copy's workspace.yaml:\n%s", y)
	}
	if strings.Contains(strings.Join(rc.Args, " "), "tok") || !slices.Contains(rc.Env, "COPILOT_PROVIDER_API_KEY=tok") {
		t.Errorf("the token is not in the environment only: %q %q", rc.Args, rc.Env)
	}
	if _, ok := rc.Meta["fork_method"]; !ok {
		t.Errorf("meta = %v", rc.Meta)
	}
}
