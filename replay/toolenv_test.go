package replay

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
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
	env := r.toolEnv()
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
	env, err := isolatedHome([]string{"PATH=/usr/bin:/bin", "HOME=" + real, "TMPDIR=" + real}, filepath.Join(state, "version-probe"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := probeVersion(context.Background(), cli, env); err != nil || v != "0.171.0" {
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
