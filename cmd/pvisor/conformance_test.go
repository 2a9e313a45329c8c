package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/result"
)

// The sandbox-playback contract as pVisor writes it (reference pvisor.md
// §4-5 and pVisor's replay contract tests): orchestrators written for pVisor
// find every artifact by role, format and native file name. Each case runs
// the command and checks the output dir against the names in the reference.

const piBase = `{"type":"session","version":3,"id":"019f","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}
{"type":"message","id":"u1","parentId":null,"timestamp":"t","message":{"role":"user","content":"say hi"}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"echo hi"}}],"stopReason":"toolUse"}}
{"type":"message","id":"r1","parentId":"a1","timestamp":"t","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"hi\n"}],"isError":false}}
`

type wantArtifact struct{ role, format, path string } // path relative to the run's output dir

func TestContractArtifacts(t *testing.T) {
	traj := func(p string) string { return "../../testdata/trajectories/" + p }
	common := []wantArtifact{
		{"playback_plan", "sandbox-playback/plan-v1", "manifest.json"},
		{"replay_events", "sandbox-playback/events-v1", "replay-events.jsonl"},
		{"replay_summary", "sandbox-playback/summary-v1", "replay-summary.json"},
	}
	replayed := append([]wantArtifact{
		{"observation_comparison", "sandbox-playback/comparison-v1", "observation-comparison.json"},
		{"agent_logs", "sandbox-playback/log-directory-v1", "logs"},
	}, common...)
	for _, tc := range []struct {
		name, agent, content, file, mode string
		want                             []wantArtifact
	}{
		{"claude prepare", "claude-code", claudeBase, "", "--prepare-only", append([]wantArtifact{
			{"prepared_native_prefix", "claude-code/native-jsonl-2.1.7", "native/prepared-prefix.jsonl"}}, common...)},
		{"claude replay", "claude-code", claudeBase, "", "--replay-only", append([]wantArtifact{
			{"prepared_native_prefix", "claude-code/native-jsonl-2.1.7", "native/prepared-prefix.jsonl"},
			{"reconstructed_native_trajectory", "claude-code/native-jsonl-2.1.7", "native/reconstructed-prefix.jsonl"}}, replayed...)},
		{"codex replay", "codex", codexBase, "", "--replay-only", append([]wantArtifact{
			{"prepared_native_prefix", "codex/native-jsonl-0.41.0", "native/prepared-prefix.jsonl"},
			{"reconstructed_native_trajectory", "codex/native-jsonl-0.41.0", "native/reconstructed-trajectory.jsonl"}}, replayed...)},
		{"opencode replay", "opencode", "", traj("opencode/takopi_opencode_stream_success.jsonl"), "--replay-only", append([]wantArtifact{
			{"prepared_native_prefix", "opencode/native-events-jsonl", "native/prepared-prefix.jsonl"},
			{"reconstructed_native_trajectory", "opencode/session-export-v1", "native/opencode-session.json"},
			{"native_session_export", "opencode/session-export-v1", "native/opencode-session.json"}}, replayed...)},
		{"pi session replay", "pi", piBase, "", "--replay-only", append([]wantArtifact{
			{"prepared_native_prefix", "pi-agent/native-session-jsonl", "native/prepared-prefix.jsonl"},
			{"reconstructed_native_trajectory", "pi-agent/native-session-jsonl", "native/reconstructed-events.jsonl"}}, replayed...)},
		{"pi events prepare", "pi", "", traj("pi/takopi_pi_stream_success.jsonl"), "--prepare-only", append([]wantArtifact{
			{"prepared_native_prefix", "pi-agent/native-events-jsonl", "native/prepared-prefix.jsonl"}}, common...)},
		{"openhands prepare", "openhands", "", traj("openhands/ohands_multi_swe_bench_output.instance1.jsonl"), "--prepare-only", append([]wantArtifact{
			{"prepared_native_prefix", "openhands/native-json-0.35.0", "native/prepared-replay-events.json"}}, common...)},
		{"mini prepare", "mini-swe-agent", "", traj("mini-swe-agent/generated_mini-2.4.6_toolcall.traj.json"), "--prepare-only", append([]wantArtifact{
			{"prepared_native_prefix", "mini-swe-agent/native-json-2.4.6", "native/prepared-prefix.json"}}, common...)},
		{"mini replay", "mini-swe-agent", "", "../../trajectory/miniswe/testdata/recorded/1.17.5/last_mini_run.traj.json", "--replay-only", append([]wantArtifact{
			{"prepared_native_prefix", "mini-swe-agent/native-json-1.17.5", "native/prepared-prefix.json"},
			{"reconstructed_native_trajectory", "mini-swe-agent/native-json-1.17.5", "native/reconstructed-trajectory.json"}}, replayed...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "traj")
			data := []byte(tc.content)
			if tc.file != "" {
				var err error
				if data, err = os.ReadFile(tc.file); err != nil {
					t.Fatal(err)
				}
			}
			os.WriteFile(path, data, 0o644)
			ws := filepath.Join(dir, "ws")
			os.Mkdir(ws, 0o755)
			var stdout, stderr bytes.Buffer
			code := run([]string{"replay", tc.mode, "--agent", tc.agent, "--trajectory", path, "--after-step", "1",
				"--workspace", ws, "--state-dir", filepath.Join(dir, "state"), "--output-dir", filepath.Join(dir, "out"), "--run-id", "r"}, &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
			}
			res := checkResultLine(t, stdout.Bytes())
			out := filepath.Join(dir, "out", "r")
			var got []wantArtifact
			for _, a := range res["artifacts"].([]any) {
				m := a.(map[string]any)
				rel, _ := filepath.Rel(out, m["path"].(string))
				got = append(got, wantArtifact{m["role"].(string), m["format"].(string), rel})
				if _, err := os.Stat(m["path"].(string)); err != nil {
					t.Errorf("artifact %s: %v", m["role"], err)
				}
			}
			sortArtifacts(got)
			sortArtifacts(tc.want)
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(wantArtifact{})); d != "" {
				t.Errorf("artifacts (-want +got):\n%s", d)
			}
		})
	}
}

func sortArtifacts(a []wantArtifact) {
	sort.Slice(a, func(i, j int) bool { return a[i].role+a[i].path < a[j].role+a[j].path })
}

// runContract runs one prepare-only or replay-only claude-code replay and
// returns its output dir.
func runContract(t *testing.T, mode string, extra ...string) (out string, res map[string]any) {
	t.Helper()
	dir := t.TempDir()
	// A symbolic link in the directory path: source.path must resolve it.
	real := filepath.Join(dir, "real")
	os.Mkdir(real, 0o755)
	os.Symlink(real, filepath.Join(dir, "link"))
	os.WriteFile(filepath.Join(real, "s.jsonl"), []byte(claudeBase), 0o644)
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	var stdout, stderr bytes.Buffer
	args := append([]string{"replay", mode, "--agent", "claude-code", "--trajectory", filepath.Join(dir, "link", "s.jsonl"), "--after-step", "1",
		"--workspace", ws, "--state-dir", filepath.Join(dir, "state"), "--output-dir", filepath.Join(dir, "out"), "--run-id", "r"}, extra...)
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	return filepath.Join(dir, "out", "r"), checkResultLine(t, stdout.Bytes())
}

func readJSONFile(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Field names of replay-summary.json and manifest.json (§4.4).
func TestContractSummaryAndManifest(t *testing.T) {
	for _, mode := range []string{"--prepare-only", "--replay-only"} {
		t.Run(mode, func(t *testing.T) {
			out, _ := runContract(t, mode, "--boundary-user-prompt", "look again")
			sum := readJSONFile(t, filepath.Join(out, "replay-summary.json"))
			for _, k := range []string{"schema_version", "agent", "after_step", "replayed_tool_calls", "exact_observations",
				"different_observations", "comparison_is_gating", "continuation_status", "continued_steps", "boundary_user_prompt",
				"normalized_exact_observations"} {
				if _, ok := sum[k]; !ok {
					t.Errorf("replay-summary.json lacks %q: %v", k, sum)
				}
			}
			if sum["schema_version"] != "sandbox-playback.summary/v1" || sum["comparison_is_gating"] != false ||
				sum["continuation_status"] != "not_started" || sum["agent"] != "claude-code" {
				t.Errorf("summary %v", sum)
			}
			m := readJSONFile(t, filepath.Join(out, "manifest.json"))
			agent := m["agent"].(map[string]any)
			if agent["name"] != "claude-code" || agent["version"] != "2.1.7" || agent["profile"] != "claude-code/session-jsonl" {
				t.Errorf("manifest agent %v", agent)
			}
			src := m["source"].(map[string]any)["path"].(string)
			if !filepath.IsAbs(src) || strings.Contains(src, "/link/") || !strings.HasSuffix(src, "/real/s.jsonl") {
				t.Errorf("source.path %q is not canonical", src)
			}
			b := m["boundary"].(map[string]any)
			if b["after_step"] != 1.0 || b["complete_tool_batch"] != true || b["prefix_model_turns"] != 1.0 || b["tool_calls"] != 1.0 {
				t.Errorf("boundary %v", b)
			}
			batch := m["batches"].([]any)[0].(map[string]any)
			// pVisor's form for Claude Code (the first assistant entry, 0-based); ours beside it.
			if batch["native_locator"] != "event:1" || batch["native_position"] != "lines 2-3" || batch["ordinal"] != 1.0 {
				t.Errorf("batch %v", batch)
			}
			call := batch["tool_calls"].([]any)[0].(map[string]any)
			for _, k := range []string{"ordinal", "call_id", "name", "arguments"} {
				if _, ok := call[k]; !ok {
					t.Errorf("tool call lacks %q", k)
				}
			}
		})
	}
	// A version the file does not record is null, never "".
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	os.WriteFile(path, []byte(strings.ReplaceAll(claudeBase, `"version":"2.1.7",`, "")), 0o644)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"replay", "--prepare-only", "--agent", "claude-code", "--trajectory", path, "--after-step", "1",
		"--state-dir", filepath.Join(dir, "s"), "--output-dir", filepath.Join(dir, "o"), "--run-id", "r"}, &stdout, &stderr); code != 0 {
		t.Fatal(stdout.String())
	}
	m := readJSONFile(t, filepath.Join(dir, "o", "r", "manifest.json"))
	if v, ok := m["agent"].(map[string]any)["version"]; !ok || v != nil {
		t.Errorf("unknown version is %#v, want null", v)
	}
}

// The journal is pVisor's trace journal: a pvisor.trace/5 header, then
// records whose event.data.name and payload carry the replay events.
func TestContractJournal(t *testing.T) {
	out, _ := runContract(t, "--replay-only", "--boundary-user-prompt", "look again")
	data, err := os.ReadFile(filepath.Join(out, "replay-events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var hdr struct{ Format, Journal string }
	json.Unmarshal([]byte(lines[0]), &hdr)
	if hdr.Format != "pvisor.trace/5" || hdr.Journal == "" {
		t.Fatalf("header %s", lines[0])
	}
	var names []string
	payloads := map[string]map[string]any{}
	prev := ""
	for i, l := range lines[1:] {
		var rec struct {
			Position struct {
				Journal string
				Offset  int
			}
			Event struct {
				Version     int      `json:"version"`
				ID          string   `json:"id"`
				TraceID     string   `json:"trace_id"`
				Producer    string   `json:"producer"`
				Scope       []string `json:"scope"`
				CausedBy    []string `json:"caused_by"`
				Level       string   `json:"level"`
				Granularity string   `json:"granularity"`
				Data        struct {
					Fact, Domain, Name string
					Version            int
					Payload            map[string]any
				} `json:"data"`
			}
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		e := rec.Event
		if rec.Position.Journal != hdr.Journal || rec.Position.Offset != i || e.Version != 5 || e.Producer != "pvisor-replay" ||
			e.Data.Fact != "observation" || e.Data.Domain != "replay" || e.Data.Version != 1 || e.Level != "info" ||
			e.Granularity != "operation" || len(e.Scope) != 2 || e.Scope[0] != "replay" || e.Scope[1] != e.TraceID {
			t.Errorf("record %d: %s", i, l)
		}
		if prev != "" && (len(e.CausedBy) != 1 || e.CausedBy[0] != prev) {
			t.Errorf("record %d: caused_by %v, want [%s]", i, e.CausedBy, prev)
		}
		prev = e.ID
		names = append(names, e.Data.Name)
		payloads[e.Data.Name] = e.Data.Payload
	}
	want := []string{"run_started", "plan_validated", "tool_started", "tool_finished", "session_rebuilt", "run_finished"}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("event names (-want +got):\n%s", d)
	}
	for ev, keys := range map[string][]string{
		"run_started":     {"run_id", "agent", "source_sha256", "after_step", "boundary_user_prompt_requested", "boundary_user_prompt_sha256"},
		"plan_validated":  {"profile", "tool_calls"},
		"tool_started":    {"batch", "call_id", "tool"},
		"tool_finished":   {"batch", "call_id", "return_code", "is_error", "duration_ms"},
		"session_rebuilt": {"prepared_only", "sha256"},
		"run_finished":    {"status"},
	} {
		for _, k := range keys {
			if _, ok := payloads[ev][k]; !ok {
				t.Errorf("%s payload lacks %q: %v", ev, k, payloads[ev])
			}
		}
	}
	if s, _ := payloads["run_started"]["boundary_user_prompt_sha256"].(string); len(s) != 64 {
		t.Errorf("boundary_user_prompt_sha256 %v", payloads["run_started"]["boundary_user_prompt_sha256"])
	}
	if strings.Contains(string(data), "look again") {
		t.Error("the journal stores the boundary prompt's text")
	}
	recs, err := result.ReadJournal(filepath.Join(out, "replay-events.jsonl"))
	if err != nil || len(recs) != len(want) {
		t.Errorf("ReadJournal: %d records, %v", len(recs), err)
	}
}

// Exit codes where pVisor's differ from ours before, and the reduced object
// of an early failure (§4.1, §5.3).
func TestContractEarlyFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		wantExit int
		wantCat  string
		dirs     bool // state_dir/output_dir resolved
	}{
		{"missing trajectory file", []string{"--trajectory", "{dir}/nope.jsonl", "--after-step", "1", "--run-id", "r"}, 2, "configuration_error", true},
		{"max-steps 0", []string{"--trajectory", "{traj}", "--after-step", "1", "--max-steps", "0", "--run-id", "r"}, 2, "configuration_error", true},
		{"flag error without run id", []string{"--trajectory", "{traj}", "--after-step", "0x1"}, 2, "configuration_error", false},
		{"after-step 0", []string{"--trajectory", "{traj}", "--after-step", "0", "--run-id", "r"}, 2, "configuration_error", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			traj := filepath.Join(dir, "s.jsonl")
			os.WriteFile(traj, []byte(claudeBase), 0o644)
			args := []string{"replay", "--prepare-only", "--agent", "claude-code", "--state-dir", filepath.Join(dir, "st"), "--output-dir", filepath.Join(dir, "out")}
			for _, a := range tc.args {
				args = append(args, strings.NewReplacer("{dir}", dir, "{traj}", traj).Replace(a))
			}
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			res := checkResultLine(t, stdout.Bytes())
			if code != tc.wantExit || res["failure"].(map[string]any)["category"] != tc.wantCat {
				t.Errorf("exit %d category %v, want %d %s", code, res["failure"], tc.wantExit, tc.wantCat)
			}
			if res["phase"] != nil || res["quality"] != nil || res["agent_status"] != "not_started" || len(res["artifacts"].([]any)) != 0 {
				t.Errorf("not the reduced object: %s", stdout.String())
			}
			if tc.dirs {
				if res["state_dir"] != filepath.Join(dir, "st", "r") || res["output_dir"] != filepath.Join(dir, "out", "r") {
					t.Errorf("dirs %v %v", res["state_dir"], res["output_dir"])
				}
			} else if res["state_dir"] != nil || res["output_dir"] != nil {
				t.Errorf("dirs %v %v, want null", res["state_dir"], res["output_dir"])
			}
		})
	}
}

// agent.disallowed_tools is in every result (§4.1), [] when none.
func TestContractDisallowedTools(t *testing.T) {
	_, res := runContract(t, "--prepare-only", "--agent-disallowed-tool", "WebFetch")
	if got := res["agent"].(map[string]any)["disallowed_tools"]; !cmp.Equal(got, []any{"WebFetch"}) {
		t.Errorf("disallowed_tools %v", got)
	}
	_, res = runContract(t, "--prepare-only")
	if got := res["agent"].(map[string]any)["disallowed_tools"]; !cmp.Equal(got, []any{}) {
		t.Errorf("disallowed_tools %#v, want []", got)
	}
}
