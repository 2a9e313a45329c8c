package replay

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay/agentcli"
	"github.com/pvisor/pvisor/replay/toolenv"
	toolrun "github.com/pvisor/pvisor/run"
)

// --inherit-env passes the environment minus anything that looks like a
// credential, by name or by value; --pass-env names pass regardless.
func TestToolEnvDropsCredentials(t *testing.T) {
	vars := map[string]string{
		"AZURE_OPENAI_KEY":  "abc123",
		"OPENROUTER_KEY":    "or-1",
		"GITHUB_PAT":        "pat-1",
		"MY_PASSWORD":       "p",
		"GCP_CREDENTIALS":   "{}",
		"DATABASE_URL":      "postgres://app:hunter2@db:5432/app",
		"UPLOAD_HELPER":     "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
		"PLAIN_URL":         "https://example.com/x?y=1",
		"USER_URL":          "https://someone@example.com/",
		"KEYBOARD_LAYOUT":   "us",
		"PVISOR_TEST_VALUE": "kept",
		"EXPLICIT_TOKEN":    "wanted",
	}
	for k, v := range vars {
		t.Setenv(k, v)
	}
	r := &run{req: &Request{Run: RunConfig{InheritEnv: true, PassEnv: []string{"EXPLICIT_TOKEN"}}}}
	env := r.toolsEnv().Vars()
	for name, want := range map[string]bool{
		"AZURE_OPENAI_KEY": false, "OPENROUTER_KEY": false, "GITHUB_PAT": false, "MY_PASSWORD": false,
		"GCP_CREDENTIALS": false, "DATABASE_URL": false, "UPLOAD_HELPER": false,
		"PLAIN_URL": true, "USER_URL": true, "KEYBOARD_LAYOUT": true, "PVISOR_TEST_VALUE": true, "EXPLICIT_TOKEN": true,
	} {
		if got := slices.Contains(env, name+"="+vars[name]); got != want {
			t.Errorf("%s passed=%v, want %v", name, got, want)
		}
	}
}

// The version probe writes its caches under the state dir, never in the
// user's HOME or TMPDIR.
func TestVersionProbeHomeIsIsolated(t *testing.T) {
	real := t.TempDir()
	state := t.TempDir()
	cli := script(t, `mkdir -p "$HOME/.codex/tmp" && touch "$TMPDIR/probe" "$XDG_CACHE_HOME/c" && echo "codex-cli 0.171.0"`)
	env, err := agentcli.IsolatedHome([]string{"PATH=/usr/bin:/bin", "HOME=" + real, "TMPDIR=" + real}, filepath.Join(state, "version-probe"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := agentcli.ProbeVersion(context.Background(), cli, env); err != nil || v != "0.171.0" {
		t.Fatalf("probe: %q %v", v, err)
	}
	if ents, _ := os.ReadDir(real); len(ents) != 0 {
		t.Errorf("the probe wrote into the real HOME/TMPDIR: %v", ents)
	}
	for _, p := range []string{"home/.codex/tmp", "tmp/probe", "home/.cache/c"} {
		if _, err := os.Stat(filepath.Join(state, "version-probe", p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// A replayed tool that allocates past the run's memory cgroup is killed
// (bash -c, not a login shell: a login shell's profile may run `pyenv
// rehash`, and a rehash killed for memory leaves its lock file behind on
// the host, which stalls every later login shell for 60 s);
// the fresh observation says why, the result names the limit, and the run
// still ends with a result.
func TestToolMemoryLimitKillsTool(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("tool isolation needs root")
	}
	if cg, err := toolrun.NewMemoryCgroup(1 << 30); err != nil {
		t.Skipf("no memory cgroup here: %v", err)
	} else {
		cg.Close()
	}
	old := toolenv.MemoryLimit
	toolenv.MemoryLimit = 64 << 20
	t.Cleanup(func() { toolenv.MemoryLimit = old })
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	traj := filepath.Join(dir, "t.jsonl")
	os.WriteFile(traj, []byte(`{"timestamp": "2025-09-24T19:22:20.000Z", "type": "session_meta", "payload": {"id": "01997e76-d124-7592-9cac-2ec05abbca08", "cwd": "/w", "cli_version": "0.40.0"}}
{"timestamp": "2025-09-24T19:22:21.000Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}}
{"timestamp": "2025-09-24T19:22:22.000Z", "type": "response_item", "payload": {"type": "function_call", "name": "shell", "arguments": "{\"command\": [\"bash\", \"-c\", \"x=$(head -c 200000000 /dev/zero | tr '\\\\0' a); echo ${#x}\"], \"timeout_ms\": 20000}", "call_id": "c0"}}
{"timestamp": "2025-09-24T19:22:23.000Z", "type": "response_item", "payload": {"type": "function_call_output", "call_id": "c0", "output": "{\"output\": \"200000000\\n\", \"metadata\": {\"exit_code\": 0, \"duration_seconds\": 0.1}}"}}
`), 0o644)
	res := Run(context.Background(), &Request{Agent: "codex", Trajectory: traj, AfterStep: 1, Mode: ReplayOnly,
		RunID: "r", StateRoot: dir + "/state", OutputRoot: dir + "/out", Workspace: ws})
	if res.Failure != nil || res.ReplayedToolCalls != 1 {
		t.Fatalf("failure %+v, replayed %d", res.Failure, res.ReplayedToolCalls)
	}
	if line := string(res.Line()); !strings.Contains(line, `"schema_version":"sandbox-playback.result/v3"`) {
		t.Errorf("result line %s", line)
	}
	meta, _ := json.Marshal(res.Metadata["tool_isolation"])
	if !strings.Contains(string(meta), `"memory_limit":{"bytes":67108864,"mechanism":"cgroup-`) {
		t.Errorf("tool_isolation %s does not name the cgroup limit", meta)
	}
	comps, _ := os.ReadFile(filepath.Join(dir, "out", "r", "observation-comparison.json"))
	if !strings.Contains(string(comps), "the run's memory limit (67108864 bytes") || !strings.Contains(string(comps), "137") {
		t.Errorf("observation does not say the tool was killed for memory:\n%s", comps)
	}
}
