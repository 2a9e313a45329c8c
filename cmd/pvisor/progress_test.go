package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay/workspace"
)

// TestReplayProgress: a replay reports each replayed step on stderr (plain
// lines when stderr is not a terminal), --quiet reports nothing, and stdout
// stays the one result line either way. Nothing of the session's text
// (prompts, tool output) is printed.
func TestReplayProgress(t *testing.T) {
	sessions := filepath.Join("..", "..", "testdata", "e2e", "sessions", "claude-code@2.1.197")
	traj, _ := filepath.Glob(filepath.Join(sessions, "*-*-*-*-*.jsonl"))
	if len(traj) != 1 {
		t.Fatalf("recording: %v", traj)
	}
	for _, quiet := range []bool{false, true} {
		dir := t.TempDir()
		ws := filepath.Join(dir, "ws")
		if err := workspace.Fresh(filepath.Join(sessions, "repo.tar.gz"), ws); err != nil {
			t.Fatal(err)
		}
		args := []string{"replay", "--agent", "claude-code", "--trajectory", traj[0], "--after-step", "2", "--replay-only",
			"--workspace", ws, "--state-dir", filepath.Join(dir, "state"), "--output-dir", filepath.Join(dir, "out"), "--run-id", "p"}
		if quiet {
			args = append(args, "--quiet")
		}
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
		}
		if n := strings.Count(stdout.String(), "\n"); n != 1 {
			t.Errorf("stdout holds %d lines, want the one result line", n)
		}
		if quiet {
			if stderr.Len() != 0 {
				t.Errorf("--quiet printed on stderr:\n%s", stderr.String())
			}
			continue
		}
		want := []string{"plan: 2 step(s) to replay", "replaying step 1/2: Glob", "replaying step 1/2: Bash",
			"replaying step 2/2: Read", "replaying step 2/2: Grep", "session rebuilt with the fresh observations", "done: replayed"}
		var got []string
		line := regexp.MustCompile(`^pvisor \[ *[0-9]+\.[0-9]s\] (.*)$`)
		for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			m := line.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("not a progress line: %q", l)
			}
			got = append(got, m[1])
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("progress lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if strings.Contains(stderr.String(), "greeter") {
			t.Error("progress printed session content")
		}
	}
}
