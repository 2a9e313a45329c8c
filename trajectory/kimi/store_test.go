package kimi

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/capture"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/trajectory/formattest"
	"github.com/pvisor/pvisor/trajectory/session/sessiontest"
)

const recorded = "../../testdata/e2e/sessions/kimi@2.1.0/wire.jsonl"

// The recording moves to another cwd and back byte-exactly, and the real
// CLI put it in the directory WorkspaceID names.
func TestSessionRecordings(t *testing.T) {
	sessiontest.Recordings(t, Sessions(), []string{recorded}, nil,
		func(t *testing.T, name, got string) {
			formattest.Golden(t, filepath.Join("testdata", "golden", "session-rewrite_"+name+".txt"), got)
		})
	_, loc := sessiontest.Recorded(t, Sessions(), filepath.Dir(recorded))
	o, err := Sessions().Origin(bytes.NewReader(mustRead(t, recorded)))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(loc.Main, string(filepath.Separator))[1]; got != WorkspaceID(o.Cwd) {
		t.Errorf("the CLI keeps the session in %s, WorkspaceID says %s", got, WorkspaceID(o.Cwd))
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestSessionLocateRefusals(t *testing.T) {
	sessiontest.Locate(t, Sessions(), func(id string, variant int) string {
		return filepath.Join("sessions", []string{"wd_a_0123456789ab", "wd_b_ba9876543210"}[variant], id, "agents", "main", "wire.jsonl")
	})
}

// Locate lists the session directory's files but a running CLI's logs,
// notify and lock files; a symlink stays listed so capture refuses it.
func TestSessionLocateFiles(t *testing.T) {
	root := t.TempDir()
	const id = "session_1994202e-759f-4da4-8902-5c72c3f773e1"
	dir := filepath.Join(root, "sessions", "wd_repo_8908fbdd6ff1", id)
	for _, f := range []string{"agents/main/wire.jsonl", "state.json", "agents/main/file-history/ab@v1", "logs/kimi-code.log",
		"notify/state.json", "agents/main/x.lock"} {
		sessiontest.WriteFile(t, filepath.Join(dir, f), []byte("{}\n"))
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	loc, err := Sessions().Locate(root, id)
	if err != nil {
		t.Fatal(err)
	}
	rel := func(f string) string { return filepath.Join("sessions", "wd_repo_8908fbdd6ff1", id, f) }
	want := []string{rel("agents/main/file-history/ab@v1"), rel("link"), rel("state.json")}
	if loc.Main != rel("agents/main/wire.jsonl") || !slices.Equal(loc.Sidecars, want) {
		t.Errorf("Locate = %+v, want sidecars %q", loc, want)
	}
	if got := (sessions{}).Place(loc.Main, "/w/other"); got != filepath.Join("sessions", WorkspaceID("/w/other"), id, "agents/main/wire.jsonl") {
		t.Errorf("Place = %s", got)
	}
}

// state.json as Kimi 2.1.0 writes it (one line, no newline): its cwd and
// the workspace directory in homedir move; a path that only starts like
// the cwd does not.
func TestRewriteState(t *testing.T) {
	from, to := "/tmp/p/repo", "/w/new place"
	in := `{"id":"session_x","version":2,"cwd":"/tmp/p/repo","agents":{"main":{"homedir":"/h/.kimi-code/sessions/` + WorkspaceID(from) +
		`/session_x/agents/main","type":"main"}},"custom":{},"note":"/tmp/p/repo"}`
	var out bytes.Buffer
	n, err := Sessions().Rewrite(&out, strings.NewReader(in), from, to)
	if err != nil || n != 2 {
		t.Fatalf("Rewrite = %d, %v", n, err)
	}
	got := out.String()
	if gjson.Get(got, "cwd").Str != to || gjson.Get(got, "agents.main.homedir").Str != "/h/.kimi-code/sessions/"+WorkspaceID(to)+"/session_x/agents/main" ||
		gjson.Get(got, "note").Str != from || strings.HasSuffix(got, "\n") {
		t.Errorf("rewritten state.json: %s", got)
	}
	for _, c := range []struct{ text, want string }{
		{"cwd is `/tmp/p/repo`.", "cwd is `/w/new place`."},
		{"/tmp/p/repo/AGENTS.md and /tmp/p/repo2 and /tmp/p/repo.old", "/w/new place/AGENTS.md and /tmp/p/repo2 and /tmp/p/repo.old"},
	} {
		line := `{"type":"profile.bind","systemPrompt":` + string(quoteRaw([]byte(c.text))) + `}`
		out.Reset()
		if _, err := Sessions().Rewrite(&out, strings.NewReader(line), from, to); err != nil {
			t.Fatal(err)
		}
		if got := gjson.Get(out.String(), "systemPrompt").Str; got != c.want {
			t.Errorf("systemPrompt %q → %q, want %q", c.text, got, c.want)
		}
	}
}

// The resume points state.json at the restored directory and passes the
// token in the environment only; a fork is `kimi fork <id> -y`, whose
// printed child id is read back.
func TestResumeCommand(t *testing.T) {
	root := t.TempDir()
	const id = "session_1994202e-759f-4da4-8902-5c72c3f773e1"
	cwd := "/w/new place"
	dir := filepath.Join(root, "sessions", WorkspaceID(cwd), id)
	src, err := os.ReadFile(recorded)
	if err != nil {
		t.Fatal(err)
	}
	sessiontest.WriteFile(t, filepath.Join(dir, "agents", "main", "wire.jsonl"), src)
	sessiontest.WriteFile(t, filepath.Join(dir, "state.json"), []byte(`{"id":"`+id+`","version":2,"cwd":"/w/new place","agents":{"main":{"homedir":"/old/home/x","type":"main"}}}`))
	call := launch.ResumeCall{SID: id, Root: root, Prompt: "go on", Cwd: cwd, Bridge: launch.BridgeAddr{URL: "http://127.0.0.1:9", Token: "tok"}}
	rc, err := resumeCommand(call)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rc.Args, []string{"-S", id, "-p", "go on", "--output-format", "stream-json"}) {
		t.Errorf("args = %q", rc.Args)
	}
	for _, e := range []string{"KIMI_MODEL_API_KEY=tok", "KIMI_MODEL_NAME=fake-model", "KIMI_MODEL_BASE_URL=http://127.0.0.1:9/v1", "KIMI_CODE_HOME=" + root} {
		if !slices.Contains(rc.Env, e) {
			t.Errorf("env lacks %s: %q", e, rc.Env)
		}
	}
	state, _ := os.ReadFile(filepath.Join(dir, "state.json"))
	if got := gjson.GetBytes(state, "agents.main.homedir").Str; got != filepath.Join(dir, "agents", "main") {
		t.Errorf("homedir = %s", got)
	}
	if rw, _ := rc.Meta["rewritten"].([]string); !slices.Contains(rw, "state.json agents.main.homedir") || slices.Contains(rw, "state.json cwd") {
		t.Errorf("rewritten = %q", rw)
	}
	call.Fork = true
	if _, err := resumeCommand(call); err == nil {
		t.Error("a fork call without the fork pre-step was launched as a resume")
	}
	fc, _ := forkCommand(call)
	if !slices.Equal(fc.Args, []string{"fork", id, "-y"}) {
		t.Errorf("fork args = %q", fc.Args)
	}
	for _, c := range []struct {
		out, want string
		ok        bool
	}{
		{"Forked to session_a408d9fa-1ab0-4e31-8824-25bea5474136 (\"Fork: " + id + "\") in 887ms\n", "session_a408d9fa-1ab0-4e31-8824-25bea5474136", true},
		{"error: session not found\n", "", false},
		{"Forked to session_../../etc (x)\n", "", false},
	} {
		got, err := forkID([]byte(c.out))
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("forkID(%q) = %q, %v", c.out, got, err)
		}
	}
}

// The assistant text of the recorded stream-json output, and the session
// id its resume hint names.
func TestOutputOfTheRecording(t *testing.T) {
	path := filepath.Join(filepath.Dir(recorded), "stdout.jsonl")
	var text []string
	for _, line := range bytes.Split(mustRead(t, path), []byte("\n")) {
		if s := outputText(line); s != "" {
			text = append(text, s)
		}
	}
	if len(text) == 0 || text[len(text)-1] != "Added NOTES.md and fixed the README typo; git status shows both changes." {
		t.Errorf("assistant text = %q", text)
	}
	if got := outputText([]byte(`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"think","think":"x"},{"type":"text","text":"b"}]}`)); got != "ab" {
		t.Errorf("text parts = %q", got)
	}
	id, err := resume.SessionID(path)
	if err != nil || id != "session_1994202e-759f-4da4-8902-5c72c3f773e1" {
		t.Errorf("SessionID = %q, %v", id, err)
	}
}

// Capture bundles the directory (the log left out) with the shared
// capture's refusals: a FIFO or a symlink in the session is refused.
func TestCaptureSessionDirectory(t *testing.T) {
	const id = "session_1994202e-759f-4da4-8902-5c72c3f773e1"
	for _, c := range []struct {
		name  string
		plant func(dir string) error
		files int
		fail  string
	}{
		{"plain", func(string) error { return nil }, 3, ""},
		{"fifo", func(dir string) error { return syscall.Mkfifo(filepath.Join(dir, "agents", "main", "pipe"), 0o600) }, 0, "pipe"},
		{"symlink", func(dir string) error { return os.Symlink("/etc/passwd", filepath.Join(dir, "state2.json")) }, 0, "symlink"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "sessions", "wd_repo_8908fbdd6ff1", id)
			sessiontest.WriteFile(t, filepath.Join(dir, "agents", "main", "wire.jsonl"), mustRead(t, recorded))
			sessiontest.WriteFile(t, filepath.Join(dir, "state.json"), []byte(`{"id":"`+id+`","version":2,"cwd":"/tmp/pvisor-e2e/kimi/repo","agents":{}}`))
			sessiontest.WriteFile(t, filepath.Join(dir, "agents", "main", "file-history", "ab@v1"), []byte("old README\n"))
			sessiontest.WriteFile(t, filepath.Join(dir, "logs", "kimi-code.log"), []byte("log\n"))
			if err := c.plant(dir); err != nil {
				t.Fatal(err)
			}
			_, m, err := capture.Capture(capture.Options{Store: Sessions(), Root: root, ID: id, StoreDir: filepath.Join(t.TempDir(), "store")})
			if c.fail != "" {
				if err == nil || !strings.Contains(err.Error(), c.fail) {
					t.Fatalf("Capture = %v, want a refusal naming %s", err, c.fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Files) != c.files || m.OriginCwd != "/tmp/pvisor-e2e/kimi/repo" {
				t.Errorf("manifest = %+v", m)
			}
		})
	}
}
