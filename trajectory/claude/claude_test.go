package claude

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

const dataDir = "../../testdata/trajectories/claude-code"

var corpus = formattest.Corpus{
	Format: New(),
	Globs:  []string{dataDir + "/*.jsonl"},
	Refused: map[string]formattest.Refusal{
		// Synthetic schema-coverage fixture: "[trimmed for fixture]" stands
		// in for every uuid of its last lines.
		"agentsessions_claude_small.jsonl": formattest.Malformed(43, "duplicate uuid [trimmed for fixture] (first used at line 42)"),
		// Synthetic parent session whose Task call has no id.
		"agentsessions_claude_subagent_0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl": formattest.Malformed(3, "tool_use block has no id"),
		"agentsessions_claude_subagent_0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f__subagents__agent-a0ad4f44468bdf20d.jsonl": formattest.Unsupported(1,
			"subagent transcript: every entry has isSidechain=true (agentId a0ad4f44468bdf20d)"),
		"codemie_-tmp-private_agent-36541525.jsonl": formattest.Unsupported(1,
			"subagent transcript: every entry has isSidechain=true (agentId 36541525) (pass the parent session file instead: 4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"),
		"codemie_incremental-subagents_turn-2__subagents__agent-a485154.jsonl": formattest.Unsupported(1,
			"(pass the parent session file instead: e9fb405b-169f-40eb-9396-7e75076f045d.jsonl"),
	},
	Columns: []formattest.Column{formattest.Reasoning, formattest.Bytes, formattest.Torn, formattest.Sizes},
	Bad:     badInputs(),
	Unit:    "line",
}

func TestGolden(t *testing.T) { corpus.TestGolden(t) }

// TestPrefixRoundTrip cuts every sample after every step and decodes the
// cut again: it must be a byte prefix holding exactly the same actions.
func TestPrefixRoundTrip(t *testing.T) {
	corpus.ForEach(t, func(t *testing.T, _ string, data []byte, tr *trajectory.Trajectory) {
		formattest.CheckPrefixes(t, New(), data, tr, formattest.AllSteps(tr), formattest.Verbatim(data, tr, true))
	})
}

func TestDetect(t *testing.T) {
	corpus.TestDetect(t, filepath.Dir(dataDir))
	for _, path := range corpus.Files(t) {
		head := formattest.Head(t, path)
		// A head cut inside the first line is not enough evidence, but
		// must not be claimed wrongly either; cut after the first line.
		if i := bytes.IndexByte(head, '\n'); i > 0 && !New().Detect(head[:min(i+10, len(head))]) {
			t.Errorf("%s: not detected from its first line", filepath.Base(path))
		}
		// A first line longer than the head still starts like an entry.
		if bytes.HasPrefix(head, []byte(`{"parentUuid":`)) && !New().Detect(head[:100]) {
			t.Errorf("%s: not detected from a head cut inside its first line", filepath.Base(path))
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
		formattest.CheckReplayable(t, f, tt.name, tt.args, tt.want)
	}
	for _, name := range f.ReplayTools() {
		if _, ok := replayed[name]; !ok {
			t.Errorf("ReplayTools lists %s but CheckReplayable refuses it", name)
		}
	}
}
