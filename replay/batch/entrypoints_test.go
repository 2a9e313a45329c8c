package batch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay"
)

func TestCheckEntrypoints(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	codex := script("codex", `echo "codex-cli 0.171.0"`, 0o755)
	claude := script("claude", `echo "2.1.332 (Claude Code)"`, 0o755)
	notCodex := script("kimi", `echo "2.1.0"`, 0o755)
	plain := script("plain", `echo "codex-cli 0.171.0"`, 0o644)
	missing := filepath.Join(dir, "npm", "node_modules", ".bin", "codex")
	run := func(id, agent, entry string, mode replay.Mode) *Run {
		r := &Run{ID: id, Agent: agent}
		r.req.AgentEntrypoint, r.req.Mode = entry, mode
		return r
	}
	for _, tc := range []struct {
		name  string
		runs  []*Run
		probe bool
		want  []string // one substring per expected problem, in order
	}{
		{"the agent's CLIs", []*Run{run("a", "codex", codex, replay.Continue), run("b", "claude-code", claude, replay.Continue)}, true, nil},
		{"missing, once for two runs", []*Run{run("a", "codex", missing, replay.Continue), run("b", "codex", missing, replay.Continue)}, false,
			[]string{"codex: agent_entrypoint " + missing + " does not exist (testdata/e2e/install-clis.sh installs the tested CLIs as .e2e/bin/<binary>"}},
		{"not executable", []*Run{run("a", "codex", plain, replay.Continue)}, false, []string{"is not an executable file"}},
		{"a directory", []*Run{run("a", "codex", dir, replay.Continue)}, false, []string{"is not an executable file"}},
		{"another agent's CLI, probed", []*Run{run("a", "codex", notCodex, replay.Continue)}, true,
			[]string{"codex: " + notCodex + ` is not a CLI pvisor can continue codex with: ` + notCodex + ` printed "2.1.0", not the way codex prints its version (1 run(s), first a)`}},
		{"another agent's CLI, not probed", []*Run{run("a", "codex", notCodex, replay.Continue)}, false, nil},
		{"claude's CLI for codex", []*Run{run("a", "codex", claude, replay.Continue)}, true, []string{"not the way codex prints its version"}},
		{"no CLI runs", []*Run{run("a", "codex", missing, replay.ReplayOnly), run("b", "codex", missing, replay.PrepareOnly)}, true, nil},
		{"two problems", []*Run{run("a", "codex", missing, replay.Continue), run("b", "claude-code", plain, replay.Continue)}, false,
			[]string{"claude-code: agent_entrypoint " + plain + " is not an executable file", "codex: agent_entrypoint " + missing + " does not exist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := CheckEntrypoints(context.Background(), tc.runs, tc.probe)
			if len(errs) != len(tc.want) {
				t.Fatalf("%d problems, want %d: %v", len(errs), len(tc.want), errs)
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, errs[i], w)
				}
			}
		})
	}
	t.Run("on PATH", func(t *testing.T) {
		t.Setenv("PATH", dir)
		if errs := CheckEntrypoints(context.Background(), []*Run{run("a", "codex", "", replay.Continue)}, true); errs != nil {
			t.Errorf("codex on PATH: %v", errs)
		}
		errs := CheckEntrypoints(context.Background(), []*Run{run("a", "opencode", "", replay.Continue)}, false)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "opencode not found on PATH; install it") ||
			!strings.Contains(errs[0].Error(), "or pass agent_entrypoint PATH") || strings.Count(errs[0].Error(), "install-clis.sh") != 1 {
			t.Errorf("opencode not on PATH: %v", errs)
		}
	})
}
