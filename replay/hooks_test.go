package replay

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/result"
)

// The Launch hook sees the CLI launch as it is about to run: the session
// staged in the home, the workspace, TMPDIR made, the bridge listening, and
// the argv and environment of a resume.
func TestLaunchHookSeesTheStagedLaunch(t *testing.T) {
	f := newContFixture(t)
	var got Launch
	var staged []string
	f.req.Hooks = &Hooks{Launch: func(l Launch) {
		got = l
		entries, _ := os.ReadDir(l.Home)
		for _, e := range entries {
			staged = append(staged, e.Name())
		}
		if _, err := os.Stat(l.Temp); err != nil {
			t.Errorf("TMPDIR at launch: %v", err)
		}
	}}
	res := f.run(t)
	if res.Failure != nil || res.AgentStatus != result.AgentCompleted {
		t.Fatalf("result: %s\nstderr: %s", res.Line(), stderrOf(f))
	}
	if got.Entry != f.req.AgentEntrypoint || got.Dir != f.ws || !strings.HasPrefix(got.Bridge, "http://127.0.0.1:") {
		t.Errorf("launch %+v: want entry %s, dir %s, a loopback bridge", got, f.req.AgentEntrypoint, f.ws)
	}
	if want := filepath.Join(f.dir, "state", "c", "codex-home"); got.Home != want {
		t.Errorf("home %s, want %s", got.Home, want)
	}
	if !slices.Contains(got.Env, "TMPDIR="+got.Temp) || !slices.Contains(got.Env, "CODEX_HOME="+got.Home) {
		t.Errorf("env lacks TMPDIR=%s or CODEX_HOME=%s: %q", got.Temp, got.Home, got.Env)
	}
	if !slices.Contains(staged, "pvisor-staged-session.jsonl") || !slices.Contains(got.Args, "resume") {
		t.Errorf("at launch the home held %q and the args were %q: want the staged session and a resume", staged, got.Args)
	}
}
