package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay/agentcli"
	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory/agents"
)

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cli")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProbeVersion(t *testing.T) {
	env := []string{"PATH=/usr/bin:/bin"}
	for _, tc := range []struct {
		name, body, want, err string
	}{
		{"stdout", `echo "codex-cli 0.171.0"`, "0.171.0", ""},
		{"stderr, with a prefix", `echo "pi v0.73.1 (node 22)" >&2`, "0.73.1", ""},
		{"pre-release", `echo "2.1.197-beta.3 (Claude Code)"`, "2.1.197-beta.3", ""},
		{"no number", `echo "dev build"`, "", "printed no version number"},
		{"fails", `echo "boom" >&2; exit 3`, "", "--version failed (exit status 3): boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := agentcli.ProbeVersion(context.Background(), script(t, tc.body), env)
			if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("got %q, %v; want %q, %q", got, err, tc.want, tc.err)
			}
		})
	}
}

// TestVersionShapes: each launcher knows how its CLI prints --version (the
// real outputs of the tested releases), and refuses other programs' output.
func TestVersionShapes(t *testing.T) {
	real := map[string][]string{
		"claude-code": {"2.1.197 (Claude Code)", "2.1.332 (Claude Code)"},
		"codex":       {"codex-cli 0.171.0"},
		"opencode":    {"1.18.33"},
		"pi":          {"0.73.1", "Warning: something\n0.73.1"},
	}
	foreign := []string{"Python 3.11.2", "git version 2.39.5", "codex 1.0.0 (Claude Code)x", "", "v20.20.2 node"}
	for agent, outs := range real {
		l, _ := launcherOf(agent)
		for _, o := range outs {
			if !l.VersionShape().MatchString(o) {
				t.Errorf("%s refuses its own --version output %q", agent, o)
			}
		}
		for _, o := range foreign {
			if l.VersionShape().MatchString(o) {
				t.Errorf("%s takes %q for its --version output", agent, o)
			}
		}
	}
}

func TestEntrypoint(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "codex")
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte(""), 0o644)
	for _, tc := range []struct {
		name, explicit, path, want, source, err string
	}{
		{"explicit", exe, "", exe, result.LaunchExplicit, ""},
		{"on PATH", "", "relative:" + dir, exe, result.LaunchPath, ""},
		{"missing", filepath.Join(dir, "nope"), "", "", "", "does not exist"},
		{"not executable", plain, "", "", "", "not an executable file"},
		{"not on PATH", "", t.TempDir(), "", "", "codex not found on PATH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, src, err := agentcli.Entrypoint(tc.explicit, "codex", tc.path)
			if got != tc.want || src != tc.source || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("got %q %q %v, want %q %q %q", got, src, err, tc.want, tc.source, tc.err)
			}
		})
	}
}

// The agent inherits no credential, provider endpoint or proxy, whatever
// --inherit-env and --pass-env say; loopback is exempt from proxies.
func TestAgentBaseEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	t.Setenv("OPENAI_BASE_URL", "https://example.invalid/v1")
	t.Setenv("https_proxy", "http://proxy.invalid:3128")
	t.Setenv("PVISOR_TEST_KEEP", "1")
	r := &run{req: &Request{Run: RunConfig{InheritEnv: true, PassEnv: []string{"OPENAI_BASE_URL"}}}}
	env := r.baseEnv()
	for _, name := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "https_proxy"} {
		if envValue(env, name) != "" {
			t.Errorf("%s reached the agent", name)
		}
	}
	if envValue(env, "PVISOR_TEST_KEEP") != "1" || envValue(env, "NO_PROXY") != "127.0.0.1,localhost,::1" {
		t.Errorf("env %v", env)
	}
}

func TestClaudeLauncherRegistered(t *testing.T) {
	l, ok := launcherOf("claude-code")
	if !ok || l.Binary() != "claude" {
		t.Fatal("claude-code has no launcher")
	}
}

// replayTestedOnly are agents listed in versions.txt whose releases the
// replay is tested against (their own runtime's semantics) but which have
// no continuation launcher yet.
var replayTestedOnly = map[string]bool{}

// Every agent with a launcher has a tested range, and every tested agent a
// launcher: versions.txt and the registry cannot drift apart.
func TestLaunchersHaveTestedRanges(t *testing.T) {
	for _, agent := range agents.Launchers() {
		if len(tested.Of(agent)) == 0 {
			t.Errorf("%s has a launcher but no tested release in replay/tested/versions.txt", agent)
		}
		if replayTestedOnly[agent] {
			t.Errorf("%s has a launcher now: remove it from replayTestedOnly", agent)
		}
	}
	for _, r := range tested.Releases() {
		if replayTestedOnly[r.Agent] {
			continue
		}
		if l, ok := launcherOf(r.Agent); !ok || l.Binary() != r.Binary {
			t.Errorf("versions.txt lists %s (binary %s), which has no launcher with that binary", r.Agent, r.Binary)
		}
	}
}
