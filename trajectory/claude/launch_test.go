package claude

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/relocate"
	"github.com/pvisor/pvisor/trajectory"
)

const testNonce = "__PVISOR_NATIVE_REPLAY_00112233445566778899aabbccddeeff__"

// continuation is the recorded Claude Code session (claudeSessionDir) cut
// after step, rebuilt and ready to stage.
func continuation(t *testing.T, step int) *launch.Continuation {
	t.Helper()
	session, tr, prefix := recordedCut(t, step)
	dir := t.TempDir()
	return &launch.Continuation{Trajectory: tr, AfterStep: step, Source: session, Rebuilt: prefix,
		Workspace: filepath.Join(dir, "ws"), Home: filepath.Join(dir, "home"),
		Paths:    relocate.Paths{From: tr.Cwd, To: filepath.Join(dir, "ws")},
		Envelope: envelope.Options{Nonce: testNonce, MaxLiveTurns: 3}}
}

// The recorded upstream gets each later response with its own tool_use ids,
// inputs moved to the workspace.
func TestClaudeReplies(t *testing.T) {
	c := continuation(t, 2)
	got, err := launcher{}.Replies(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d replies after step 2, want 4", len(got))
	}
	w := got[0].ToolCalls[0]
	if w.Name != "Write" || w.ID != c.Trajectory.Actions[2].Calls[0].ID ||
		gjson.GetBytes(w.Arguments, "file_path").Str != filepath.Join(c.Workspace, "NOTES.md") {
		t.Errorf("first reply %+v (%s)", w, w.Arguments)
	}
	if last := got[3]; last.Text == "" || len(last.ToolCalls) != 0 {
		t.Errorf("the final reply is %+v, want text only", last)
	}
}

func TestClaudeStageAndCommand(t *testing.T) {
	c := continuation(t, 2)
	c.AgentArgs = []string{"--model", "opus"}
	st, err := launcher{}.Stage(c)
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*staged)
	want := StagePath(filepath.Join(c.Home, "claude-config"), c.Workspace, c.Trajectory.SessionID)
	if s.path != want {
		t.Errorf("staged at %s, want %s", s.path, want)
	}
	staged, err := os.ReadFile(s.path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(staged, []byte(c.Paths.From)) || !bytes.Contains(staged, []byte(`"cwd":"`+c.Workspace+`"`)) {
		t.Error("the staged session still names the recorded directory")
	}
	cmd, err := st.Command(launch.BridgeAddr{URL: "http://127.0.0.1:1234", Token: "tok-secret"})
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"--resume", c.Trajectory.SessionID, "--print", "--output-format", "stream-json", "--verbose",
		"--dangerously-skip-permissions", "--tools", "Bash,Edit,Glob,Grep,Read,Write", "--model", "opus", "--max-turns", "4"}
	if d := cmp.Diff(wantArgs, cmd.Args); d != "" {
		t.Errorf("args (-want +got):\n%s", d)
	}
	if slices.ContainsFunc(cmd.Args, func(a string) bool { return strings.Contains(a, "tok-secret") }) {
		t.Error("the bridge token is in argv")
	}
	for _, kv := range []string{"ANTHROPIC_API_KEY=tok-secret", "ANTHROPIC_BASE_URL=http://127.0.0.1:1234",
		"CLAUDE_CONFIG_DIR=" + filepath.Join(c.Home, "claude-config"), "CLAUDE_CODE_RESUME_PROMPT=" + ResumeMarker(testNonce),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1"} {
		if !slices.Contains(cmd.Env, kv) {
			t.Errorf("env lacks %s", kv)
		}
	}
	if string(cmd.Stdin) != testNonce {
		t.Errorf("stdin %q", cmd.Stdin)
	}

	// --agent-arg choosing the tools wins over the inferred list; without
	// --model the recorded model is passed.
	c.AgentArgs = []string{"--tools=Bash"}
	st, _ = launcher{}.Stage(c)
	cmd, _ = st.Command(launch.BridgeAddr{URL: "u", Token: "t"})
	if slices.Contains(cmd.Args, "--tools") {
		t.Errorf("args %v add --tools next to --agent-arg's", cmd.Args)
	}
	if i := slices.Index(cmd.Args, "--model"); i < 0 || cmd.Args[i+1] != "claude-opus-4-8" {
		t.Errorf("args %v do not pass the recorded model claude-opus-4-8", cmd.Args)
	}
}

// resumedSession is a staged two-line session followed by what 2.1.197 writes
// when it resumes it with the nonce (boundary-envelope.md §1.5).
func resumedSession(marker, nonce string) (string, int) {
	q := func(s string) string { return strings.ReplaceAll(s, "'", `"`) + "\n" }
	staged := q(`{'parentUuid':null,'type':'user','uuid':'u1','sessionId':'s','message':{'role':'user','content':'task'}}`) +
		q(`{'parentUuid':'u1','type':'assistant','uuid':'a1','sessionId':'s','message':{'id':'m1','role':'assistant','content':[{'type':'tool_use','id':'c1','name':'Bash','input':{}}]}}`) +
		q(`{'parentUuid':'a1','type':'user','uuid':'r1','sessionId':'s','message':{'role':'user','content':[{'tool_use_id':'c1','type':'tool_result','content':'ok'}]}}`)
	resumed := staged +
		q(`{'type':'queue-operation','operation':'enqueue','sessionId':'s','content':'`+nonce+`'}`) +
		q(`{'type':'queue-operation','operation':'dequeue','sessionId':'s'}`) +
		q(`{'parentUuid':'r1','type':'user','isMeta':true,'uuid':'k1','sessionId':'s','message':{'role':'user','content':[{'type':'text','text':'`+marker+`'}]}}`) +
		q(`{'parentUuid':'k1','type':'assistant','uuid':'n1','sessionId':'s','message':{'id':'x','model':'<synthetic>','role':'assistant','content':[{'type':'text','text':'No response requested.'}]}}`) +
		q(`{'parentUuid':'n1','type':'user','uuid':'p1','sessionId':'s','message':{'role':'user','content':'`+nonce+`'}}`) +
		q(`{'parentUuid':'p1','type':'assistant','uuid':'a2','sessionId':'s','message':{'id':'m2','role':'assistant','content':[{'type':'text','text':'done'}]}}`) +
		q(`{'type':'last-prompt','lastPrompt':'`+nonce+`','leafUuid':'a2','sessionId':'s'}`) +
		q(`{'type':'mode','mode':'normal','sessionId':'s'}`)
	return resumed, 3
}

func TestCleanSession(t *testing.T) {
	marker := ResumeMarker(testNonce)
	data, n := resumedSession(marker, testNonce)
	clean, removed, err := cleanSession([]byte(data), testNonce, marker, n)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(clean)), "\n") {
		lines = append(lines, gjson.Get(l, "uuid").Str+"<-"+gjson.Get(l, "parentUuid").Str+" "+gjson.Get(l, "type").Str)
	}
	want := []string{"u1<- user", "a1<-u1 assistant", "r1<-a1 user", "a2<-r1 assistant", "<- mode"}
	if d := cmp.Diff(want, lines); d != "" {
		t.Errorf("cleaned session (-want +got):\n%s", d)
	}
	if len(removed) != 6 {
		t.Errorf("removed %v", removed)
	}
	// The cleaned session still decodes, with the live answer on the chain.
	tr, err := New().Decode(bytes.NewReader(clean), trajectory.Options{})
	if err != nil || len(tr.Actions) != 2 || tr.Actions[1].Text != "done" {
		t.Errorf("decoded %v, %v", tr, err)
	}

	for name, tc := range map[string]struct{ data, err string }{
		"not resumed":    {strings.Join(strings.SplitAfter(data, "\n")[:3], ""), "no resume nonce record"},
		"unknown echo":   {data + `{"type":"summary","summary":"` + testNonce + `"}` + "\n", "still on line(s) [12]"},
		"file rewritten": {"{}\n", "fewer than the 3 staged"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := cleanSession([]byte(tc.data), testNonce, marker, n)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("err = %v, want %q", err, tc.err)
			}
		})
	}
}

// TestCleanSession2332 cleans a session Claude Code 2.1.332 really
// continued (staged prefix of 14 lines, resumed with the nonce on stdin
// against the fake model, one tool call, then an answer): no resume prompt
// record, the launch-context attachments hang off the nonce, and the
// request log (api-request-blob) holds the nonce.
func TestCleanSession2332(t *testing.T) {
	const nonce2332 = "__PVISOR_NATIVE_REPLAY_c4ea15acb7c17e76f2a17df90fb27abb__"
	data, err := os.ReadFile("testdata/claude-resumed-2.1.332.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	clean, removed, err := cleanSession(data, nonce2332, "__PVISOR_RESUME_MARKER_x__", 14)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range removed {
		got = append(got, r["record"].(string))
	}
	want := []string{"queue-operation enqueue (resume nonce)", "queue-operation dequeue (resume nonce)",
		"assistant <synthetic> No response requested.", "user resume nonce", "api-request-blob (resume envelope)",
		"api-request (built on a removed record)", "last-prompt (resume nonce)", "api-request (built on a removed record)",
		"last-prompt (resume nonce)"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("removed records (-want +got):\n%s", d)
	}
	if bytes.Contains(clean, []byte("__PVISOR_")) || bytes.Contains(clean, []byte("No response requested.")) {
		t.Error("the cleaned session still holds the envelope")
	}
	// The first launch-context attachment now hangs off the boundary leaf,
	// and the continuation decodes on the chain after the recorded steps.
	for _, l := range bytes.Split(clean, []byte("\n")) {
		if gjson.GetBytes(l, "attachment.type").Str == "environment" && gjson.GetBytes(l, "parentUuid").Str != "fe1d9bda-0c7b-48aa-a18e-1aa453c3589c" {
			t.Errorf("environment attachment hangs off %s", gjson.GetBytes(l, "parentUuid").Str)
		}
	}
	tr, err := New().Decode(bytes.NewReader(clean), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tr.Actions); n != 4 || tr.Actions[2].Text != "Checking." || tr.Actions[3].Text != "Done." {
		t.Errorf("decoded %d actions: %+v", n, tr.Actions)
	}
}
