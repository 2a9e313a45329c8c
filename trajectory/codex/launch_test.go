package codex

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/relocate"
	"github.com/pvisor/pvisor/trajectory"
)

const testNonce = "__PVISOR_NATIVE_REPLAY_00112233445566778899aabbccddeeff__"

func TestCleanRollout(t *testing.T) {
	prefix := `{"type":"session_meta","payload":{"id":"s"}}` + "\n" +
		`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"x"}}` + "\n"
	env := `{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>d</environment_context>"}]}}` + "\n"
	nonceItem := `{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"` + testNonce + `"}]}}` + "\n"
	nonceEv := `{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","content":[{"type":"text","text":"` + testNonce + `","text_elements":[]}]}}}` + "\n"
	oldEv := `{"type":"event_msg","payload":{"type":"user_message","message":"` + testNonce + `"}}` + "\n"
	live := `{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}}` + "\n"
	task := `{"type":"event_msg","payload":{"type":"task_started"}}` + "\n"

	clean, removed, ctx, err := cleanRollout([]byte(prefix+task+env+nonceItem+nonceEv+oldEv+live), testNonce, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := prefix + task + env + live; string(clean) != want {
		t.Errorf("cleaned rollout:\n%s", cmp.Diff(want, string(clean)))
	}
	if len(removed) != 3 || removed[0]["line"] != 5 || len(ctx) != 1 || ctx[0]["line"] != 4 || ctx[0]["role"] != "user" {
		t.Errorf("removed %v, context items %v", removed, ctx)
	}

	for _, tc := range []struct{ name, data, err string }{
		{"no nonce", prefix + live, "no resume nonce message"},
		{"nonce in an unknown record", prefix + nonceItem + `{"type":"mystery","payload":{"x":"` + testNonce + `"}}` + "\n", "still on line(s) [3]"},
		{"nonce inside the prefix only", prefix + nonceItem, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 2
			if tc.err == "" {
				n = 3 // the nonce line counts as staged: nothing after the prefix
				tc.err = "no resume nonce message"
			}
			_, _, _, err := cleanRollout([]byte(tc.data), testNonce, n)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("err = %v, want %q", err, tc.err)
			}
		})
	}
}

// The recorded upstream gets each later response of the real session with its
// own call ids and kinds, paths moved to the workspace.
func TestCodexReplies(t *testing.T) {
	session := filepath.Join(sessionDir, "rollout-2026-11-29T23-16-19-01a22998-569d-74b2-aebf-25f39bc1a17a.jsonl")
	data, err := os.ReadFile(session)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &launch.Continuation{Trajectory: tr, AfterStep: 2, Source: session,
		Paths: relocate.Paths{From: tr.Cwd, To: "/sandbox/ws"}}
	got, err := launcher{}.Replies(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d replies after step 2, want 4", len(got))
	}
	if c0 := got[0].ToolCalls[0]; c0.Type != "custom" || c0.Name != "apply_patch" || c0.ID != tr.Actions[2].Calls[0].ID ||
		!strings.HasPrefix(c0.Input, "*** Begin Patch\n*** Add File: NOTES.md") {
		t.Errorf("reply 0: %+v", c0)
	}
	var args map[string]string
	if err := json.Unmarshal(got[2].ToolCalls[0].Arguments, &args); err != nil || args["workdir"] != "/sandbox/ws" || args["cmd"] != "git status --short" {
		t.Errorf("reply 2 arguments %s (%v)", got[2].ToolCalls[0].Arguments, err)
	}
	if got[3].Text == "" || len(got[3].ToolCalls) != 0 {
		t.Errorf("reply 3 should be the final answer: %+v", got[3])
	}
	if err := (fakemodel.Script{Replies: got}).Validate(); err != nil {
		t.Error(err)
	}
}

// Staging without the recorded file name (the file was renamed) still puts the
// rollout where Codex looks for it, and keeps the date when the timezone is
// unknown.
func TestCodexStageNameAndDate(t *testing.T) {
	dir := t.TempDir()
	src := stageRollout(t, dir)
	renamed := filepath.Join(dir, "session.jsonl")
	if err := os.Rename(src, renamed); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(renamed)
	data = []byte(strings.Replace(string(data), `"timezone":"Etc/UTC"`, `"timezone":"Mars/Olympus"`, 1))
	c := &launch.Continuation{Source: renamed, Home: filepath.Join(dir, "home"), Rebuilt: data,
		Envelope: envelope.Options{Nonce: testNonce}}
	st, err := launcher{}.Stage(c)
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*staged)
	want := filepath.Join(c.Home, "sessions", "2026", "11", "29", "rollout-2026-11-29T10-00-00-01a20000-0000-7000-8000-000000000001.jsonl")
	if s.path != want || s.tz != "Mars/Olympus" || s.model != "gpt-5.5" {
		t.Errorf("staged at %s (tz %q, model %q), want %s", s.path, s.tz, s.model, want)
	}
	if d := s.meta["world_state_date"].(map[string]any); d["kept"] != true {
		t.Errorf("date metadata %v", d)
	}
	cmd, err := st.Command(launch.BridgeAddr{URL: "http://127.0.0.1:1", Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"exec", "resume", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
		"01a20000-0000-7000-8000-000000000001", testNonce}
	if d := cmp.Diff(wantArgs, cmd.Args); d != "" {
		t.Errorf("args (-want +got):\n%s", d)
	}
	cfg, _ := os.ReadFile(filepath.Join(c.Home, "config.toml"))
	for _, want := range []string{`model = "gpt-5.5"`, `base_url = "http://127.0.0.1:1/v1"`, `env_key = "PVISOR_BRIDGE_TOKEN"`,
		"supports_websockets = false", "enable_request_compression = false"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("config.toml lacks %s:\n%s", want, cfg)
		}
	}
	if strings.Contains(string(cfg), "tok") {
		t.Error("the token is in config.toml")
	}
}

// A CODEX_HOME inside the recorded working directory moves as the home.
func TestCodexStageHomeInsideCwd(t *testing.T) {
	dir := t.TempDir()
	data, _ := os.ReadFile(stageRollout(t, dir))
	data = []byte(strings.ReplaceAll(strings.ReplaceAll(string(data), "/rec/home/.codex", "/rec/ws/.codex"), "/rec/", "/root/"))
	c := &launch.Continuation{Source: "x.jsonl", Home: filepath.Join(dir, "home"), Rebuilt: data, Workspace: "/sandbox/ws",
		Paths: relocate.Paths{From: "/root/ws", To: "/sandbox/ws"}, Envelope: envelope.Options{Nonce: testNonce}}
	st, err := launcher{}.Stage(c)
	if err != nil {
		t.Fatal(err)
	}
	staged, _ := os.ReadFile(st.(*staged).path)
	if !strings.Contains(string(staged), c.Home+"/skills/.system") || strings.Contains(string(staged), "/root/") ||
		!strings.Contains(string(staged), `"cwd":"/sandbox/ws"`) {
		t.Errorf("staged rollout:\n%s", staged)
	}
}

// stageRollout copies testdata/stage's small rollout recorded in /rec/ws
// (three one-call steps, then a final answer) into dir.
func stageRollout(t *testing.T, dir string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "stage", stagedName))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, stagedName)
	if err := os.WriteFile(dst, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// stagedName is testdata/stage's rollout, named as Codex names it.
const stagedName = "rollout-2026-11-29T10-00-00-01a20000-0000-7000-8000-000000000001.jsonl"
