package codex

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
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// updating reports -update, the flag formattest registers (this package's
// tests share it: they use formattest's checks too).
func updating() bool { return flag.Lookup("update").Value.String() == "true" }

const corpusDir = "../../testdata/trajectories/codex"

// refused lists the corpus files that are not replayable rollouts, with the
// error each must produce.
var refused = map[string]struct {
	kind trajectory.Kind
	line int
	want string
}{
	"agentcmd_exec-json_stream-output-2.jsonl": {trajectory.Unsupported, 1,
		"this is a `codex exec --json` event stream, not a rollout; pass the rollout file from ~/.codex/sessions"},
	"agentcmd_exec-json_stream-output-5.jsonl": {trajectory.Unsupported, 1,
		"this is a `codex exec --json` event stream, not a rollout; pass the rollout file from ~/.codex/sessions"},
	// A sanitized schema-coverage fixture, not one session: the output of
	// line 9's call comes at line 21, after responses that could only have
	// been requested once it existed (line 12 follows line 11's output, and
	// line 14 follows line 13's).
	// Line 28 would be next: its call_id was replaced by a placeholder.
	"agentsessions_codex_small.jsonl": {trajectory.Malformed, 21,
		"custom_tool_call_output for call_id call-1 (called at line 9) comes after a later model response began at line 14"},
}

func corpusFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files in %s: %v", corpusDir, err)
	}
	return files
}

func decodeBytes(t testing.TB, data []byte) (*trajectory.Trajectory, error) {
	t.Helper()
	return New().Decode(bytes.NewReader(data), trajectory.Options{})
}

// summary is the compact, reviewable form of a decode used by the goldens.
func summary(tr *trajectory.Trajectory) string {
	var b strings.Builder
	torn := "none"
	if tr.TornTail != nil {
		torn = fmt.Sprintf("line %d", tr.TornTail.Line)
	}
	fmt.Fprintf(&b, "agent=%s version=%q session=%q format=%s lines=%d torn=%s actions=%d steps=%d\n",
		tr.Agent, tr.Version, tr.SessionID, tr.Format, tr.Lines, torn, len(tr.Actions), len(tr.Steps()))
	for i := range tr.Actions {
		a := &tr.Actions[i]
		var calls []string
		for _, c := range a.Calls {
			s := c.Name + "@" + fmt.Sprint(c.Locator.First)
			if c.Observation == nil {
				s += "->none"
			} else {
				s += "->" + fmt.Sprint(c.Observation.Locator.First)
				if c.Observation.IsError {
					s += "!"
				}
			}
			calls = append(calls, s)
		}
		fmt.Fprintf(&b, "#%d step=%d complete=%v lines=%d-%d bytes=%d-%d text=%d reasoning=%d calls=[%s]\n",
			i+1, a.Step, a.Complete(), a.Locator.First, a.Locator.Last, a.Locator.StartByte, a.Locator.EndByte,
			len(a.Text), len(a.Reasoning), strings.Join(calls, " "))
	}
	return b.String()
}

func TestCorpusGolden(t *testing.T) {
	for _, path := range corpusFiles(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := decodeBytes(t, data)
			if want, ok := refused[name]; ok {
				checkErr(t, err, want.kind, want.line, want.want)
				return
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			got := summary(tr)
			golden := filepath.Join("testdata", "golden", name+".golden")
			if updating() {
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
			if d := cmp.Diff(string(want), got); d != "" {
				t.Errorf("summary differs from %s (-want +got):\n%s", golden, d)
			}
			checkInvariants(t, tr)
		})
	}
}

func checkErr(t *testing.T, err error, kind trajectory.Kind, line int, want string) {
	t.Helper()
	var e *trajectory.Error
	if !errors.As(err, &e) {
		t.Fatalf("want *trajectory.Error containing %q, got %v", want, err)
	}
	if e.Kind != kind || e.Line != line || !strings.Contains(e.Error(), want) {
		t.Errorf("got kind=%d line=%d %q; want kind=%d line=%d containing %q", e.Kind, e.Line, e.Error(), kind, line, want)
	}
}

func checkInvariants(t testing.TB, tr *trajectory.Trajectory) {
	t.Helper()
	n := 0
	for i := range tr.Actions {
		a := &tr.Actions[i]
		if a.Step == 0 {
			if a.Complete() {
				t.Fatalf("action %d is complete but has no step", i)
			}
			continue
		}
		n++
		if a.Step != n {
			t.Fatalf("action %d has step %d, want %d", i, a.Step, n)
		}
		for _, c := range a.Calls {
			if c.Observation == nil {
				t.Fatalf("step %d call %s has no observation", a.Step, c.ID)
			}
			if c.Observation.Locator.EndByte > a.Locator.EndByte || c.Locator.First < a.Locator.First {
				t.Fatalf("step %d: action locator %v does not cover call %s", a.Step, a.Locator, c.ID)
			}
		}
	}
}

// The observations must survive the reader's buffer reuse, and the 0.40
// JSON wrapper must reach the model unchanged.
func TestObservationContent(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpusDir, "agentcmd_rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := decodeBytes(t, data)
	if err != nil {
		t.Fatal(err)
	}
	first := tr.Actions[0].Calls[0]
	if first.Name != ToolUpdatePlan || first.Observation.Content != PlanUpdated {
		t.Errorf("first call = %s %q, want update_plan %q", first.Name, first.Observation.Content, PlanUpdated)
	}
	second := tr.Actions[1].Calls[0]
	if !strings.HasPrefix(second.Observation.Content, `{"output":`) || !strings.Contains(second.Observation.Content, `"metadata":{"exit_code":`) {
		t.Errorf("0.40 output lost its JSON wrapper: %.120q", second.Observation.Content)
	}
	if string(second.Arguments[:12]) != `{"command":[` {
		t.Errorf("shell arguments = %.60s", second.Arguments)
	}

	lean, err := New().Decode(bytes.NewReader(data), trajectory.Options{SkipObservationContent: true})
	if err != nil {
		t.Fatal(err)
	}
	if c := lean.Actions[1].Calls[0].Observation.Content; c != "" {
		t.Errorf("SkipObservationContent kept %d bytes", len(c))
	}
	if d := cmp.Diff(summary(tr), summary(lean)); d != "" {
		t.Errorf("lean decode differs in shape:\n%s", d)
	}
}

func TestUnifiedExecAndPatch(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpusDir, "codemie_rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := decodeBytes(t, data)
	if err != nil {
		t.Fatal(err)
	}
	var patch *trajectory.ToolCall
	for i := range tr.Actions {
		for j := range tr.Actions[i].Calls {
			if c := &tr.Actions[i].Calls[j]; c.Name == ToolApplyPatch && patch == nil {
				patch = c
			}
		}
	}
	if patch == nil || patch.Locator.First != 257 || patch.Arguments[0] != '"' || !strings.Contains(string(patch.Arguments), `*** Begin Patch\n`) {
		t.Fatalf("freeform apply_patch at line 257 not decoded as a JSON string: %+v", patch)
	}
	if !strings.HasPrefix(patch.Observation.Content, `{"output":"Success. Updated the following files:`) {
		t.Errorf("apply_patch output = %.80q", patch.Observation.Content)
	}
	// Lines 44-46: one response, three parallel exec_command calls whose
	// outputs are lines 48-50; lines 51-53 are the next, tool-only response.
	a, b := findAction(tr, 44), findAction(tr, 51)
	if a == nil || b == nil || a == b || len(a.Calls) != 3 || len(b.Calls) != 3 || b.Text != "" {
		t.Fatalf("responses at lines 44 and 51 not split into two 3-call batches: %+v / %+v", a, b)
	}
	if a.Text == "" {
		t.Errorf("action at 44 lost the commentary message of line 43")
	}
	if a.Locator.First != 41 || a.Locator.Last != 50 {
		t.Errorf("action at 44 spans %v, want lines 41-50", a.Locator)
	}
}

func findAction(tr *trajectory.Trajectory, callLine int) *trajectory.Action {
	for i := range tr.Actions {
		for _, c := range tr.Actions[i].Calls {
			if c.Locator.First == callLine {
				return &tr.Actions[i]
			}
		}
	}
	return nil
}

func TestWritePrefix(t *testing.T) {
	for _, path := range corpusFiles(t) {
		name := filepath.Base(path)
		if _, ok := refused[name]; ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := decodeBytes(t, data)
			if err != nil {
				t.Fatal(err)
			}
			steps := tr.Steps()
			if len(steps) == 0 {
				var buf bytes.Buffer
				err := New().WritePrefix(&buf, bytes.NewReader(data), int64(len(data)), tr, 1)
				checkErr(t, err, trajectory.Malformed, 0, "trajectory has 0 complete steps")
				return
			}
			for _, n := range uniq(1, 2, len(steps)/2, len(steps)-1, len(steps)) {
				if n < 1 || n > len(steps) {
					continue
				}
				var buf bytes.Buffer
				if err := New().WritePrefix(&buf, bytes.NewReader(data), int64(len(data)), tr, n); err != nil {
					t.Fatalf("step %d: %v", n, err)
				}
				if !bytes.HasPrefix(data, buf.Bytes()) {
					t.Fatalf("step %d: prefix is not a byte prefix of the file", n)
				}
				pt, err := decodeBytes(t, buf.Bytes())
				if err != nil {
					t.Fatalf("step %d: prefix does not decode: %v", n, err)
				}
				if got := len(pt.Steps()); got != n {
					t.Fatalf("step %d: prefix decodes to %d steps", n, got)
				}
				if got, want := len(pt.Actions), New().PrefixModelTurns(tr, n); got != want {
					t.Errorf("step %d: prefix has %d model turns, PrefixModelTurns says %d", n, got, want)
				}
				for i, s := range pt.Steps() {
					if d := cmp.Diff(steps[i].Calls, s.Calls); d != "" {
						t.Fatalf("step %d of prefix %d differs:\n%s", i+1, n, d)
					}
				}
			}
			if err := New().WritePrefix(&bytes.Buffer{}, bytes.NewReader(data), int64(len(data)), tr, len(steps)+1); err == nil {
				t.Errorf("WritePrefix after the last step succeeded")
			}
		})
	}
}

func uniq(ns ...int) []int {
	seen := map[int]bool{}
	var out []int
	for _, n := range ns {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

func TestDetect(t *testing.T) {
	for _, path := range corpusFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 64<<10 {
			data = data[:64<<10]
		}
		if !New().Detect(data) {
			t.Errorf("%s: not detected", filepath.Base(path))
		}
	}
	// First lines of the other agents' files (from /work/shared/corpus).
	others := map[string]string{
		"claude":       `{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/x","sessionId":"s","version":"2.0.14","type":"user","message":{"role":"user","content":"hi"},"uuid":"u","timestamp":"2025-10-01T00:00:00.000Z"}`,
		"claude-sum":   `{"type":"summary","summary":"x","leafUuid":"u"}`,
		"pi":           `{"type":"session","version":3,"id":"0199","timestamp":"2025-12-01T00:00:00.000Z","cwd":"/x"}`,
		"pi-msg":       `{"type":"message","id":"ab12cd34","parentId":null,"timestamp":"2025-12-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}`,
		"opencode":     `{"type":"step_start","timestamp":1767445000100,"sessionID":"ses_1","part":{"type":"step-start"}}`,
		"opencode-evt": `{"timestamp":1772642196508,"threadId":"1","event":{"type":"session.created","properties":{}}}`,
		"openhands":    `[{"id":0,"timestamp":"2025-01-01T00:00:00","source":"user","message":"hi","action":"message","args":{}}]`,
		"miniswe":      `{"info":{"mini_version":"1.15.0"},"messages":[],"trajectory_format":"mini-swe-agent-1"}`,
		"empty":        ``,
		"blank":        "\n\n  \n",
		"cut":          `{"timestamp":"2025-09-25T01:22:20.083Z","type":"session_meta","pay`,
	}
	for name, head := range others {
		if New().Detect([]byte(head)) {
			t.Errorf("%s: detected as codex", name)
		}
	}
	cut := `{"timestamp":"2025-09-25T01:22:20.083Z","type":"session_meta","payload":{"id":"0199","base_instructions":{"text":"You are Codex, a coding agent based on GPT-5. You and`
	if !New().Detect([]byte(cut)) {
		t.Errorf("session_meta line cut inside the head not detected")
	}
}

func TestCheckReplayable(t *testing.T) {
	tests := []struct {
		name, args string
		want       string // "" = replayable
	}{
		{"shell", `{"command":["bash","-lc","ls"],"workdir":"/w","timeout_ms":1000}`, ""},
		{"shell", `{"command":"ls"}`, "argv array"},
		{"shell", `{"command":[]}`, "non-empty array"},
		{"shell", `"ls"`, "not a JSON object"},
		{"container.exec", `{"command":["ls"]}`, ""},
		{"shell_command", `{"command":"ls -la","workdir":"/w"}`, ""},
		{"shell_command", `{"command":["ls"]}`, "non-empty string"},
		{"local_shell_call", `{"type":"exec","command":["ls"],"timeout_ms":null,"working_directory":null,"env":null,"user":null}`, ""},
		{"local_shell_call", `{"type":"open","command":["ls"]}`, "is not \"exec\""},
		{"exec_command", `{"cmd":"sed -n 1,10p a.go","workdir":"/w","yield_time_ms":1000}`, ""},
		{"exec_command", `{"command":"ls"}`, `"cmd"`},
		{"write_stdin", `{"session_id":48230,"chars":"","yield_time_ms":1000}`, ""},
		{"write_stdin", `{"chars":"q"}`, "session_id"},
		{"apply_patch", `"*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n"`, ""},
		{"apply_patch", `{"input":"*** Begin Patch\n*** End Patch"}`, ""},
		{"apply_patch", `"rm -rf /"`, "Begin Patch"},
		{"update_plan", `{"plan":[{"step":"a","status":"completed"}]}`, ""},
		{"update_plan", `{"explanation":"x"}`, "plan"},
		{"view_image", `{"path":"a.png"}`, "image"},
		{"tool_search", `{"query":"x"}`, "configuration"},
		{"js", `{"code":"1"}`, `does not re-execute the Codex tool "js"`},
		{"github__create_issue", `{}`, `MCP tool "create_issue" of server "github"`},
		{"web_search", `{}`, "model provider"},
	}
	for _, tt := range tests {
		err := New().CheckReplayable(&trajectory.ToolCall{ID: "c", Name: tt.name, Arguments: []byte(tt.args)})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s %s: %v", tt.name, tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s %s: got %v, want error containing %q", tt.name, tt.args, err, tt.want)
		}
	}
	// Every call in the corpus rollouts is one of the replayable tools
	// except codemie 0.128's browser tool "js".
	for _, path := range corpusFiles(t) {
		if _, ok := refused[filepath.Base(path)]; ok {
			continue
		}
		data, _ := os.ReadFile(path)
		tr, err := decodeBytes(t, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range tr.Actions {
			for i := range a.Calls {
				if err := New().CheckReplayable(&a.Calls[i]); err != nil && a.Calls[i].Name != "js" {
					t.Errorf("%s line %d: %v", filepath.Base(path), a.Calls[i].Locator.First, err)
				}
			}
		}
	}
}

// Files of the other agents (as their packages add them) must not look
// like Codex rollouts.
func TestDetectOtherAgents(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpusDir, "..", "*", "*"))
	for _, path := range files {
		if filepath.Base(filepath.Dir(path)) == "codex" || strings.HasSuffix(path, ".md") {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if len(data) > 64<<10 {
			data = data[:64<<10]
		}
		if New().Detect(data) {
			t.Errorf("%s is detected as a Codex rollout", path)
		}
	}
}

// The raw scanner must agree with gjson on every payload field of the corpus.
func TestPayloadField(t *testing.T) {
	keys := []string{"type", "id", "call_id", "name", "arguments", "input", "output", "role", "status", "missing"}
	for _, path := range corpusFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(data), "\n") {
			if line == "" {
				continue
			}
			for _, k := range keys {
				want := gjson.Get(line, "payload."+k)
				got, ok := payloadField(line, k)
				if ok != want.Exists() || got != want.Raw {
					t.Fatalf("%s line %d key %s: got %v %.60q, gjson %v %.60q", filepath.Base(path), n+1, k, ok, got, want.Exists(), want.Raw)
				}
			}
		}
	}
	for _, line := range []string{`{}`, `{"payload":1}`, `{"payload":{"a":"x\\\"y","output":[1,{"b":"]}"}],"z":2}}`, `{"payload" : { "output" : "a" } }`, `{"payload":{"output":`} {
		want := gjson.Get(line, "payload.output")
		got, ok := payloadField(line, "output")
		if ok != want.Exists() || got != want.Raw {
			t.Errorf("%s: got %v %q, gjson %v %q", line, ok, got, want.Exists(), want.Raw)
		}
	}
}
