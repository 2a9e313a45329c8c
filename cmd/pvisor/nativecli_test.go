package main

import (
	"bytes"
	"os"
	"path/filepath"
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
