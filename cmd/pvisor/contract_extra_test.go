package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// metadata.native_cli names the agent, as pVisor's generic native-CLI
// adapter does, for Codex and OpenCode replays past prepare-only.
func TestContractNativeCLI(t *testing.T) {
	for _, tc := range []struct {
		name, agent, content, mode string
		want                       string // "" = absent
	}{
		{"codex replay-only", "codex", codexBase, "--replay-only", "codex"},
		{"codex prepare-only", "codex", codexBase, "--prepare-only", ""},
		{"claude-code replay-only", "claude-code", claudeBase, "--replay-only", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			traj, ws := filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "ws")
			os.WriteFile(traj, []byte(tc.content), 0o644)
			os.Mkdir(ws, 0o755)
			var stdout, stderr bytes.Buffer
			code := run([]string{"replay", tc.mode, "--agent", tc.agent, "--trajectory", traj, "--after-step", "1", "--workspace", ws,
				"--state-dir", filepath.Join(dir, "st"), "--output-dir", filepath.Join(dir, "out"), "-q"}, &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			got := gjson.GetBytes(stdout.Bytes(), "metadata.native_cli")
			if got.Str != tc.want || (tc.want == "" && got.Exists()) {
				t.Errorf("metadata.native_cli = %s, want %q", got.Raw, tc.want)
			}
		})
	}
}

// A trajectory error is pVisor's reduced object however late the format
// finds it: an OpenHands replay that does not start with the user's task
// decodes, but its prefix cannot be cut; nothing is written.
func TestContractPrefixErrorIsReduced(t *testing.T) {
	const v0 = `[{"id":1,"source":"agent","action":"run","args":{"command":"ls","thought":""},"timestamp":"2025-01-01T00:00:00"},
{"id":2,"source":"agent","observation":"run","cause":1,"content":"a.txt","extras":{"command":"ls","metadata":{"exit_code":0}},"timestamp":"2025-01-01T00:00:01"}]
`
	for _, mode := range []string{"--prepare-only", "--replay-only"} {
		dir := t.TempDir()
		traj, ws := filepath.Join(dir, "o.json"), filepath.Join(dir, "ws")
		os.WriteFile(traj, []byte(v0), 0o644)
		os.Mkdir(ws, 0o755)
		var stdout, stderr bytes.Buffer
		code := run([]string{"replay", mode, "--agent", "openhands", "--trajectory", traj, "--after-step", "1", "--workspace", ws, "--run-id", "r",
			"--state-dir", filepath.Join(dir, "st"), "--output-dir", filepath.Join(dir, "out"), "-q"}, &stdout, &stderr)
		res := gjson.ParseBytes(stdout.Bytes())
		if code != 10 || res.Get("failure.category").Str != "trajectory_error" || !strings.Contains(res.Get("failure.message").Str, "user's task message") {
			t.Fatalf("%s: exit %d, %s", mode, code, stdout.String())
		}
		if res.Get("phase").Type != gjson.Null || res.Get("quality").Type != gjson.Null || len(res.Get("artifacts").Array()) != 0 {
			t.Errorf("%s: not the reduced object: %s", mode, stdout.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "out", "r")); err == nil {
			t.Errorf("%s: the output dir was made", mode)
		}
	}
}

// native_locator in each agent's form, as pVisor's manifest writes it
// (read off pvisor-sandbox 0.3.1 on these fixtures).
func TestContractNativeLocator(t *testing.T) {
	fixture := func(p string) string { return "../../testdata/trajectories/" + p }
	for _, tc := range []struct {
		agent, file string
		after       string
		want        []string
	}{
		{"claude-code", "", "1", []string{"event:1"}}, // claudeBase: the assistant entry is line 2
		{"codex", fixture("codex/codemie_rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"), "1", []string{"events:7-10"}},
		{"openhands", fixture("openhands/ohands_trajs_wrong_initial_state.json"), "2", []string{"event:3", "event:5"}},
		{"mini-swe-agent", fixture("mini-swe-agent/generated_mini-2.4.6_textbased.traj.json"), "2", []string{"messages:2", "messages:5"}},
		{"swe-agent", fixture("swe-agent/6e44b9__sweagenttestrepo-1c2844.traj"), "2", []string{"trajectory:0", "trajectory:1"}},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			dir := t.TempDir()
			traj := tc.file
			if traj == "" {
				traj = filepath.Join(dir, "s.jsonl")
				os.WriteFile(traj, []byte(claudeBase), 0o644)
			}
			var stdout, stderr bytes.Buffer
			if code := run([]string{"replay", "--prepare-only", "--agent", tc.agent, "--trajectory", traj, "--after-step", tc.after, "--run-id", "r",
				"--state-dir", filepath.Join(dir, "st"), "--output-dir", filepath.Join(dir, "out"), "-q"}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			data, err := os.ReadFile(filepath.Join(dir, "out", "r", "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range gjson.GetBytes(data, "batches").Array() {
				got = append(got, b.Get("native_locator").Str)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("native_locator %q, want %q", got, tc.want)
			}
		})
	}
}
