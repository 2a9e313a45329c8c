package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/trajectory/agents"
)

// Every subcommand's help goes to stdout with exit 0 and ends with its flags.
func TestHelpOnStdout(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // a flag the help must list
	}{
		{[]string{"replay", "--help"}, "--overlayfs-path"},
		{[]string{"replay", "-h"}, "--after-step"},
		{[]string{"inspect", "--help"}, "--instance"},
		{[]string{"doctor", "--help"}, "--agent-entrypoint"},
		{[]string{"batch", "--help"}, "--shard"},
		{[]string{"batch", "run", "--help"}, "--dry-run"},
		{[]string{"batch", "report", "--help"}, "--out"},
		{[]string{"batch", "emit", "-h"}, "--image"},
		{[]string{"session", "--help"}, "--from"},
		{[]string{"session", "locate", "--help"}, "--home"},
		{[]string{"session", "rewrite", "--help"}, "--to"},
		{[]string{"capture", "--help"}, "--store"},
		{[]string{"resume", "--help"}, "--fake-script"},
		{[]string{"fork", "--help"}, "--after-step"},
		{[]string{"fake-model", "--help"}, "--script"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d, want 0", code)
			}
			if stderr.Len() != 0 {
				t.Errorf("stderr not empty: %q", stderr.String())
			}
			out := stdout.String()
			if !strings.Contains(out, "Usage") || !strings.Contains(out, tc.want) {
				t.Errorf("stdout lacks Usage or %s:\n%s", tc.want, out)
			}
			if strings.HasSuffix(strings.TrimSpace(out), "Flags:") || strings.HasSuffix(strings.TrimSpace(out), ":") {
				t.Errorf("help ends with an empty heading:\n%s", out)
			}
		})
	}
}

var agentsLine = regexp.MustCompile(`(?m)^Agents: (.*)\.$`)

// helpAgents is the "Agents: a, b (note), c." line of a command's help.
func helpAgents(t *testing.T, args ...string) []string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	run(append(args, "--help"), &stdout, &stderr)
	m := agentsLine.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("%v --help has no Agents: line:\n%s", args, stdout.String())
	}
	var out []string
	for _, a := range strings.Split(m[1], ", ") {
		out = append(out, strings.Fields(a)[0])
	}
	return out
}

// The agents session locate and capture list in their help are those they
// accept: a listed one looks for the session (exit 10, not found), any
// other is refused as unsupported (exit 11).
func TestHelpAgentsAgreeWithCode(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		name string
		help []string
		cmd  func(agent string) []string
	}{
		{"session locate", []string{"session", "locate"}, func(a string) []string {
			return []string{"session", "locate", "--agent", a, "--home", home, "abc"}
		}},
		{"capture", []string{"capture"}, func(a string) []string {
			return []string{"capture", "--agent", a, "--home", home, "--session", "abc", "--store", t.TempDir()}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", "/nonexistent")
			listed := map[string]bool{}
			for _, a := range helpAgents(t, tc.help...) {
				listed[a] = true
			}
			for _, a := range agents.Names() {
				var stdout, stderr bytes.Buffer
				code := run(tc.cmd(a), &stdout, &stderr)
				want := 11
				if listed[a] {
					want = 10
					if a == "opencode" && tc.name == "capture" {
						want = 10 // no database: looked for before the CLI is needed
					}
				}
				if code != want {
					t.Errorf("%s (listed %v): exit %d, want %d: %s", a, listed[a], code, want, stderr.String())
				}
				if listed[a] {
					delete(listed, a)
				}
			}
			if len(listed) > 0 {
				t.Errorf("help lists agents that do not exist: %v", listed)
			}
		})
	}
}

// The --agent flag of session and capture names the same agents as the help.
func TestAgentFlagUsageAgrees(t *testing.T) {
	for _, args := range [][]string{{"session", "locate"}, {"capture"}} {
		var stdout, stderr bytes.Buffer
		run(append(args, "--help"), &stdout, &stderr)
		want := "(" + strings.Join(helpAgents(t, args...), ", ") + ")"
		for _, line := range strings.Split(stdout.String(), "\n") {
			if strings.Contains(line, "--agent string") && !strings.Contains(line, want) {
				t.Errorf("%v: %q does not list %s", args, line, want)
			}
		}
	}
}

// Unknown flags and agents close to a known one say which was meant.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--agent", "codex", "--after_step", "2"}, "did you mean --after-step?"},
		{[]string{"replay", "--agent", "claude", "--trajectory", "x.jsonl", "--after-step", "1", "--prepare-only"}, "did you mean claude-code?"},
		{[]string{"inspect", "--agnet", "codex", "x"}, "did you mean --agent?"},
		{[]string{"inspect", "--agent", "codx", "../../testdata/trajectories/codex/SOURCES.md"}, "did you mean codex?"},
		{[]string{"session", "locate", "--agent", "claude", "abc"}, "did you mean claude-code?"},
		{[]string{"session", "locate", "--hom", "x", "abc"}, "did you mean --home?"},
		{[]string{"capture", "--agent", "pi", "--sesion", "abc"}, "did you mean --session?"},
		{[]string{"resume", "--agent", "codex", "--promt", "x"}, "did you mean --prompt?"},
		{[]string{"doctor", "--jsn"}, "did you mean --json?"},
		{[]string{"batch", "run", "--dryrun", "x.toml"}, "did you mean --dry-run?"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code == 0 {
				t.Fatal("exit 0")
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tc.want)
			}
		})
	}
}
