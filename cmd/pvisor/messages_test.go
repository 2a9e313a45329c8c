package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Common mistakes get messages that say what to do.
func TestMistakeMessages(t *testing.T) {
	mini, _ := filepath.Abs("../../testdata/trajectories/mini-swe-agent/gruckion_astropy__astropy-12907.traj.json")
	for _, tc := range []struct {
		name     string
		args     []string // {traj} is a small Claude Code session, {dir} a temp dir
		env      map[string]string
		want     []string
		wantOnce string // a phrase that must occur exactly once
		not      string
	}{
		{name: "after-step omitted",
			args: []string{"replay", "--agent", "claude-code", "--trajectory", "{traj}", "--prepare-only"},
			want: []string{"--after-step N is required", "pvisor inspect {traj}"}, not: "--after-step 0"},
		{name: "after_step omitted in TOML",
			args: []string{"replay", "--config", "{dir}/r.toml"},
			want: []string{"after_step is required"}},
		{name: "agent CLI not on PATH",
			args: []string{"replay", "--agent", "claude-code", "--trajectory", "{traj}", "--after-step", "1", "--workspace", "{dir}/ws", "--upstream", "recorded"},
			env:  map[string]string{"PATH": "/nonexistent"},
			want: []string{"claude not found on PATH", "testdata/e2e/install-clis.sh", "pvisor doctor", "--agent-entrypoint"}},
		{name: "no API key",
			args: []string{"replay", "--agent", "claude-code", "--trajectory", "{traj}", "--after-step", "1", "--workspace", "{dir}/ws",
				"--agent-entrypoint", "{dir}/claude", "--upstream", "anthropic"},
			env:  map[string]string{"ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": "", "ANTHROPIC_BASE_URL": ""},
			want: []string{"ANTHROPIC_API_KEY", "--upstream recorded"}},
		{name: "mini-swe-agent submit step",
			args:     []string{"replay", "--agent", "mini-swe-agent", "--trajectory", mini, "--after-step", "20", "--replay-only", "--workspace", "{dir}/ws"},
			want:     []string{"submission command ends the episode", "at most 19"},
			wantOnce: "choose an earlier"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			traj := filepath.Join(dir, "s.jsonl")
			os.Mkdir(filepath.Join(dir, "ws"), 0o755)
			os.WriteFile(traj, []byte(claudeBase), 0o644)
			os.WriteFile(filepath.Join(dir, "r.toml"), []byte("[replay]\nagent = \"claude-code\"\ntrajectory = \"s.jsonl\"\nprepare_only = true\n"), 0o644)
			// A stand-in claude that prints a tested version.
			os.WriteFile(filepath.Join(dir, "claude"), []byte("#!/bin/sh\necho '2.1.332 (Claude Code)'\n"), 0o755)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			r := strings.NewReplacer("{dir}", dir, "{traj}", traj)
			args := []string{}
			for _, a := range tc.args {
				args = append(args, r.Replace(a))
			}
			args = append(args, "--state-dir", filepath.Join(dir, "st"), "--output-dir", filepath.Join(dir, "out"))
			if tc.args[1] == "--config" {
				args = args[:3]
			}
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code == 0 {
				t.Fatalf("exit 0: %s", stdout.String())
			}
			msg := stderr.String()
			for _, w := range tc.want {
				if !strings.Contains(msg, r.Replace(w)) {
					t.Errorf("stderr lacks %q:\n%s", r.Replace(w), msg)
				}
			}
			if tc.not != "" && strings.Contains(msg, tc.not) {
				t.Errorf("stderr has %q:\n%s", tc.not, msg)
			}
			if tc.wantOnce != "" && strings.Count(msg, tc.wantOnce) != 1 {
				t.Errorf("%q occurs %d times, want once:\n%s", tc.wantOnce, strings.Count(msg, tc.wantOnce), msg)
			}
		})
	}
}
