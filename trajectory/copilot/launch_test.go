package copilot

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/relocate"
	"github.com/pvisor/pvisor/trajectory"
)

const sid = "6b4d4f01-51fa-42c7-84dc-812d8e9225db"

// Stage puts the rebuilt events.jsonl and a workspace.yaml into the
// isolated COPILOT_HOME with the cwd rewritten; Command resumes it with the
// nonce and keeps the token out of argv.
func TestStageAndCommand(t *testing.T) {
	src, err := os.ReadFile("../../testdata/trajectories/copilot/generated_copilot-1.0.102_greeter.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New().Decode(strings.NewReader(string(src)), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var prefix strings.Builder
	if err := New().WritePrefix(&prefix, strings.NewReader(string(src)), int64(len(src)), tr, 2); err != nil {
		t.Fatal(err)
	}
	ws, home := t.TempDir(), t.TempDir()
	nonce := envelope.NewNonce()
	c := &launch.Continuation{Trajectory: tr, AfterStep: 2, Rebuilt: []byte(prefix.String()), Workspace: ws, Home: home,
		Paths: relocate.Paths{From: tr.Cwd, To: ws}, Envelope: envelope.Options{Nonce: nonce}, Version: "1.0.102"}
	st, err := launcher{}.Stage(c)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".copilot", "session-state", sid)
	ev, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(ws)
	if first := gjson.GetBytes(launch.FirstLine(ev), "data.context"); first.Get("cwd").Str != real || first.Get("gitRoot").Str != real {
		t.Errorf("session.start context = %s", first.Raw)
	}
	// What the model sees names the workspace only (the UI-only diffs of
	// result.detailedContent keep "a/<path>" headers relocate leaves alone).
	proj, err := Project(strings.NewReader(string(ev)))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range proj.Items {
		if strings.Contains(string(m), tr.Cwd) {
			t.Errorf("a staged message still names the recorded cwd: %s", m)
		}
	}
	if y, _ := os.ReadFile(filepath.Join(dir, "workspace.yaml")); !strings.HasPrefix(string(y), "id: "+sid+"\ncwd: \""+real+"\"\n") {
		t.Errorf("workspace.yaml =\n%s", y)
	}
	cmd, err := st.Command(launch.BridgeAddr{URL: "http://127.0.0.1:9", Token: "secret-token"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cmd.Args, "--resume="+sid) || !slices.Contains(cmd.Args, nonce) || strings.Contains(strings.Join(cmd.Args, " "), "secret-token") {
		t.Errorf("args = %q", cmd.Args)
	}
	if !slices.Contains(cmd.Env, "COPILOT_PROVIDER_API_KEY=secret-token") || !slices.Contains(cmd.Env, "COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:9/v1") ||
		!slices.Contains(cmd.Env, "COPILOT_OFFLINE=true") || !slices.Contains(cmd.Env, "COPILOT_MODEL=fake-model") {
		t.Errorf("env = %q", cmd.Env)
	}
	if !versionShape().MatchString("GitHub Copilot CLI 1.0.102.\nRun 'copilot update' to check for updates.\n") {
		t.Error("VersionShape misses 1.0.102's --version")
	}
}

// CleanSession drops the nonce prompt and relinks its child; a second
// nonce, or none, is an error.
func TestCleanSession(t *testing.T) {
	n := "__PVISOR_NATIVE_REPLAY_0123456789abcdef0123456789abcdef__"
	pre := `{"type":"session.start","id":"e1","parentId":null,"data":{"sessionId":"s"}}` + "\n"
	resume := `{"type":"session.resume","id":"e2","parentId":"e1","data":{}}` + "\n"
	user := `{"type":"user.message","id":"e3","parentId":"e2","data":{"content":"` + n + `","transformedContent":"<current_datetime>t</current_datetime>\n\n` + n + `"}}` + "\n"
	asst := `{"type":"assistant.message","id":"e4","parentId":"e3","data":{"content":"hi"}}` + "\n"
	got, removed, err := CleanSession([]byte(pre+resume+user+asst), n, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := pre + resume + `{"type":"assistant.message","id":"e4","parentId":"e2","data":{"content":"hi"}}` + "\n"
	if string(got) != want || len(removed) != 1 {
		t.Errorf("cleaned =\n%s\nwant\n%s", got, want)
	}
	if _, _, err := CleanSession([]byte(pre+resume+user+user), n, 1); err == nil {
		t.Error("two nonce prompts accepted")
	}
	if _, _, err := CleanSession([]byte(pre+resume), n, 1); err == nil {
		t.Error("a session without the nonce accepted")
	}
}
