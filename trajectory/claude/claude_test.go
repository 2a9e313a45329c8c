package claude

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const dataDir = "../../testdata/trajectories/claude-code"

// refused lists the sample files the decoder must refuse, with the error.
var refused = map[string]struct {
	kind trajectory.Kind
	want string
}{
	// Synthetic schema-coverage fixture: "[trimmed for fixture]" stands
	// in for every uuid of its last lines.
	"agentsessions_claude_small.jsonl": {trajectory.Malformed, "line 43: duplicate uuid [trimmed for fixture] (first used at line 42)"},
	// Synthetic parent session whose Task call has no id.
	"agentsessions_claude_subagent_0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl": {trajectory.Malformed, "line 3: tool_use block has no id"},
	"agentsessions_claude_subagent_0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f__subagents__agent-a0ad4f44468bdf20d.jsonl": {
		trajectory.Unsupported, "subagent transcript: every entry has isSidechain=true (agentId a0ad4f44468bdf20d)"},
	"codemie_-tmp-private_agent-36541525.jsonl": {trajectory.Unsupported,
		"subagent transcript: every entry has isSidechain=true (agentId 36541525) (pass the parent session file instead: 4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"},
	"codemie_incremental-subagents_turn-2__subagents__agent-a485154.jsonl": {trajectory.Unsupported,
		"(pass the parent session file instead: e9fb405b-169f-40eb-9396-7e75076f045d.jsonl"},
}

func sampleFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample files in %s: %v", dataDir, err)
	}
	return files
}

func decodeFile(t testing.TB, path string, opts trajectory.Options) (*trajectory.Trajectory, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return New().Decode(bytes.NewReader(data), opts)
}

// summary is the compact, reviewable form of a decode kept in the goldens.
func summary(t *trajectory.Trajectory) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version=%s session=%s format=%s lines=%d actions=%d steps=%d torn=%v\n",
		t.Version, t.SessionID, t.Format, t.Lines, len(t.Actions), len(t.Steps()), t.TornTail != nil)
	for i, a := range t.Actions {
		fmt.Fprintf(&b, "action %d step=%d complete=%v %s bytes=%d-%d text=%d reasoning=%d\n",
			i+1, a.Step, a.Complete(), a.Locator, a.Locator.StartByte, a.Locator.EndByte, len(a.Text), len(a.Reasoning))
		for _, c := range a.Calls {
			res := "none"
			if o := c.Observation; o != nil {
				res = fmt.Sprintf("%s error=%v content=%d", o.Locator, o.IsError, len(o.Content))
			}
			fmt.Fprintf(&b, "  call %s %s at %s args=%d result: %s\n", c.ID, c.Name, c.Locator, len(c.Arguments), res)
		}
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	for _, path := range sampleFiles(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			tr, err := decodeFile(t, path, trajectory.Options{})
			if want, ok := refused[name]; ok {
				var te *trajectory.Error
				if !errors.As(err, &te) || te.Kind != want.kind || !strings.Contains(err.Error(), want.want) {
					t.Fatalf("got %v, want a kind %d error containing %q", err, want.kind, want.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := summary(tr)
			golden := filepath.Join("testdata", "golden", strings.TrimSuffix(name, ".jsonl")+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("summary mismatch (-golden +got):\n%s", diff)
			}
			// A lean decode has the same shape and no content.
			lean, err := decodeFile(t, path, trajectory.Options{SkipObservationContent: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range lean.Actions {
				for _, c := range a.Calls {
					if c.Observation != nil && c.Observation.Content != "" {
						t.Fatalf("call %s: content kept in a lean decode", c.ID)
					}
				}
			}
			if len(lean.Steps()) != len(tr.Steps()) || len(lean.Actions) != len(tr.Actions) {
				t.Fatalf("lean decode has %d actions, full %d", len(lean.Actions), len(tr.Actions))
			}
		})
	}
}

// TestPrefixRoundTrip cuts every sample after every step and decodes the
// cut again: it must be a byte prefix holding exactly the same steps.
func TestPrefixRoundTrip(t *testing.T) {
	f := New()
	for _, path := range sampleFiles(t) {
		name := filepath.Base(path)
		if _, bad := refused[name]; bad {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		full, err := f.Decode(bytes.NewReader(data), trajectory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= len(full.Steps()); n++ {
			var buf bytes.Buffer
			err := f.WritePrefix(&buf, bytes.NewReader(data), int64(len(data)), full, n)
			if err != nil {
				var te *trajectory.Error
				if errors.As(err, &te) && strings.Contains(te.Msg, "before the boundary has no result") {
					continue // an interrupted batch earlier in the file
				}
				t.Fatalf("%s step %d: %v", name, n, err)
			}
			if !bytes.HasPrefix(data, buf.Bytes()) {
				t.Fatalf("%s step %d: prefix is not a byte prefix of the file", name, n)
			}
			cut, err := f.Decode(bytes.NewReader(buf.Bytes()), trajectory.Options{})
			if err != nil {
				t.Fatalf("%s step %d: prefix does not decode: %v", name, n, err)
			}
			if got := len(cut.Steps()); got != n {
				t.Fatalf("%s step %d: prefix has %d steps", name, n, got)
			}
			idx := full.ActionIndex(n)
			if diff := cmp.Diff(full.Actions[:idx+1], cut.Actions); diff != "" {
				t.Fatalf("%s step %d: prefix actions differ (-full +prefix):\n%s", name, n, diff)
			}
			if got, want := f.PrefixModelTurns(full, n), idx+1; got != want {
				t.Fatalf("%s step %d: PrefixModelTurns = %d, want %d", name, n, got, want)
			}
		}
	}
}

func TestDetect(t *testing.T) {
	f := New()
	for _, path := range sampleFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		head := data[:min(len(data), 64<<10)]
		if !f.Detect(head) {
			t.Errorf("%s: not detected", filepath.Base(path))
		}
		// A head cut inside the first line is not enough evidence, but
		// must not be claimed wrongly either; cut after the first line.
		if i := bytes.IndexByte(data, '\n'); i > 0 && !f.Detect(data[:i+10]) {
			t.Errorf("%s: not detected from its first line", filepath.Base(path))
		}
		// A first line longer than the head still starts like an entry.
		if bytes.HasPrefix(data, []byte(`{"parentUuid":`)) && !f.Detect(data[:100]) {
			t.Errorf("%s: not detected from a head cut inside its first line", filepath.Base(path))
		}
	}
	foreign := map[string]string{
		"codex rollout":  `{"timestamp":"2025-09-24T19:22:20.123Z","type":"session_meta","payload":{"id":"01997e76-d124-7592-9cac-2ec05abbca08","cwd":"/tmp","cli_version":"0.40.0"}}` + "\n" + `{"timestamp":"2025-09-24T19:22:21Z","type":"response_item","payload":{"type":"message","role":"user","content":[]}}` + "\n",
		"codex exec":     `{"type":"thread.started","thread_id":"019a2d7a-6455-7170-a661-c6d8b94c630a"}` + "\n" + `{"type":"turn.started"}` + "\n",
		"pi session":     `{"type":"session","version":3,"id":"a1b2c3d4","timestamp":"2026-01-01T00:00:00Z","cwd":"/tmp"}` + "\n" + `{"type":"message","id":"0a1b2c3d","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"hi"}}` + "\n",
		"pi events":      `{"type":"agent_start"}` + "\n" + `{"type":"turn_start"}` + "\n",
		"opencode run":   `{"type":"step_start","timestamp":1760000000000,"sessionID":"ses_abc","part":{"id":"prt_1","sessionID":"ses_abc","messageID":"msg_1","type":"step-start"}}` + "\n",
		"opencode kimak": `{"timestamp":1772788853247,"threadId":"1","event":{"type":"session.status","properties":{"sessionID":"ses_1","sessionId":"ses_1"}}}` + "\n",
		"json document":  "{\n  \"trajectory_format\": \"mini-swe-agent-1\",\n  \"messages\": []\n}\n",
		"json array":     `[{"id":0,"source":"user","action":"message"}]`,
		"empty":          "",
		"plain text":     "hello\nworld\n",
	}
	for name, head := range foreign {
		if f.Detect([]byte(head)) {
			t.Errorf("%s: wrongly detected as Claude Code", name)
		}
	}
	// Other agents' sample files, when their packages have copied them.
	for _, agent := range []string{"codex", "pi", "opencode", "openhands", "mini-swe-agent"} {
		files, _ := filepath.Glob(filepath.Join(dataDir, "..", agent, "*.json*"))
		for _, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if f.Detect(data[:min(len(data), 64<<10)]) {
				t.Errorf("%s/%s: wrongly detected as Claude Code", agent, filepath.Base(p))
			}
		}
	}
}

func TestProjectKey(t *testing.T) {
	// Expected values computed with Claude Code's algorithm under Node.js
	// (replace(/[^a-zA-Z0-9]/g, "-"), 200-unit cut, base-36 hash suffix).
	tests := []struct{ cwd, want string }{
		{"/Users/a/my_repo.v2", "-Users-a-my-repo-v2"},
		{`C:\Users\x`, "C--Users-x"},
		{"/tmp/private", "-tmp-private"},
		{"/home/ü/😀proj", "-home-----proj"},
		{"/" + strings.Repeat("abcdefghij/", 25), strings.Repeat("-abcdefghij", 18) + "-a-yosrc5"},
		{"/very/long/" + strings.Repeat("x", 230) + "/é😀", "-very-long-" + strings.Repeat("x", 189) + "-4x4ray"},
		{"/p/" + strings.Repeat("ab", 110), "-p-" + strings.Repeat("ab", 98) + "a-bl79gc"},
	}
	for _, tt := range tests {
		if got := ProjectKey(tt.cwd); got != tt.want {
			t.Errorf("ProjectKey(%q) = %q, want %q", tt.cwd, got, tt.want)
		}
	}
}

func TestCheckReplayable(t *testing.T) {
	f := New()
	tests := []struct {
		name, args, want string // want "" = replayable
	}{
		{"Bash", `{"command":"ls","timeout":1000}`, ""},
		{"Bash", `{"command":"npm run dev","run_in_background":true}`, "background shells are not replayed yet"},
		{"Bash", `{"cmd":"ls"}`, "no command string"},
		{"Read", `{"file_path":"/a","offset":3,"limit":10}`, ""},
		{"Write", `{"file_path":"/a","content":"x"}`, ""},
		{"Write", `{"file_path":"/a"}`, "no content string"},
		{"Edit", `{"file_path":"/a","old_string":"x","new_string":"y","replace_all":true}`, ""},
		{"MultiEdit", `{"file_path":"/a","edits":[{"old_string":"x","new_string":"y"}]}`, ""},
		{"MultiEdit", `{"file_path":"/a","edits":{}}`, "no edits array"},
		{"Glob", `{"pattern":"**/*.go"}`, ""},
		{"Grep", `{"pattern":"func","output_mode":"content"}`, ""},
		{"LS", `{"path":"/a"}`, ""},
		{"TodoWrite", `{"todos":[]}`, ""},
		{"Read", `"freeform"`, "not a JSON object"},
		{"Task", `{"prompt":"x"}`, "subagent"},
		{"Agent", `{"prompt":"x"}`, "subagent"},
		{"WebFetch", `{"url":"x"}`, "network"},
		{"WebSearch", `{"query":"x"}`, "network"},
		{"AskUserQuestion", `{}`, "asks the user"},
		{"ExitPlanMode", `{}`, "plan mode"},
		{"BashOutput", `{"bash_id":"1"}`, "background shell"},
		{"KillBash", `{"shell_id":"1"}`, "background shell"},
		{"NotebookEdit", `{}`, "not replayed yet"},
		{"mcp__happy__change_title", `{}`, "MCP tool"},
		{"Frobnicate", `{}`, "only re-executes Bash, Read, Write, Edit, MultiEdit, Glob, Grep, LS, TodoWrite"},
	}
	for _, tt := range tests {
		err := f.CheckReplayable(&trajectory.ToolCall{ID: "toolu_1", Name: tt.name, Arguments: []byte(tt.args)})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s %s: %v", tt.name, tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s %s: got %v, want %q", tt.name, tt.args, err, tt.want)
		}
	}
	for _, name := range f.ReplayTools() {
		if _, ok := replayed[name]; !ok {
			t.Errorf("ReplayTools lists %s but CheckReplayable refuses it", name)
		}
	}
}
