package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// fileStatementTraj is the bundled SWE-agent trajectory as SWE-agent writes
// one run with --problem_statement.path: its GitHub statement replaced by
// a file reference.
func fileStatementTraj(t *testing.T, dir, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "trajectories", "swe-agent", "6e44b9__sweagenttestrepo-1c2844.traj"))
	if err != nil {
		t.Fatal(err)
	}
	ps := gjson.GetBytes(data, "replay_config.problem_statement")
	data = bytes.Replace(data, []byte(ps.Raw), []byte(`{"path": "`+path+`", "type": "text_file", "id": "issue-1"}`), 1)
	traj := filepath.Join(dir, "run.traj")
	if err := os.WriteFile(traj, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return traj
}

// pVisor's --trajectory-assets, flag and TOML key: the SWE-agent problem
// statement the trajectory names as a file is inlined into the prepared
// prefix from the assets dir (read-only), and recorded by path, size and
// hash; a path leaving the dir ends with exit 2 and a v3 line.
func TestTrajectoryAssets(t *testing.T) {
	const issue = "SyntaxError: missing colon in tests/missing_colon.py\n"
	sum := sha256.Sum256([]byte(issue))
	dir := t.TempDir()
	assets := filepath.Join(dir, "assets")
	if err := os.MkdirAll(filepath.Join(assets, "issues"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(assets, "issues", "1.md"), []byte(issue), 0o444); err != nil {
		t.Fatal(err)
	}
	traj := fileStatementTraj(t, dir, "issues/1.md")
	toml := filepath.Join(dir, "r.toml")
	if err := os.WriteFile(toml, []byte("[replay]\nagent = \"swe-agent\"\ntrajectory = \"run.traj\"\nafter_step = 2\nprepare_only = true\n"+
		"trajectory_assets = \"assets\"\nrun_id = \"toml\"\nstate_dir = \"state\"\noutput_dir = \"out\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		out  string
	}{
		{"flag", []string{"--agent", "swe-agent", "--trajectory", traj, "--after-step", "2", "--prepare-only", "--trajectory-assets", assets,
			"--run-id", "flag", "--state-dir", filepath.Join(dir, "state"), "--output-dir", filepath.Join(dir, "out")}, "flag"},
		{"toml", []string{"--config", toml}, "toml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"replay"}, tc.args...), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s\n%s", code, stdout.String(), stderr.String())
			}
			checkResultLine(t, stdout.Bytes())
			res := gjson.ParseBytes(stdout.Bytes())
			in := res.Get("metadata.trajectory_assets.inlined.0")
			if in.Get("path").Str != "issues/1.md" || in.Get("bytes").Int() != int64(len(issue)) || in.Get("sha256").Str != hex.EncodeToString(sum[:]) ||
				res.Get("metadata.trajectory_assets.dir").Str != assets {
				t.Errorf("metadata.trajectory_assets = %s", res.Get("metadata.trajectory_assets").Raw)
			}
			prefix, err := os.ReadFile(filepath.Join(dir, "out", tc.out, "native", "prepared-prefix.traj"))
			if err != nil {
				t.Fatal(err)
			}
			ps := gjson.GetBytes(prefix, "replay_config.problem_statement")
			if ps.Get("type").Str != "text" || ps.Get("text").Str != issue || ps.Get("id").Str != "issue-1" || ps.Get("path").Exists() {
				t.Errorf("the prefix's problem statement = %s", ps.Raw)
			}
			if n := len(gjson.GetBytes(prefix, "trajectory").Array()); n != 2 {
				t.Errorf("the prefix holds %d trajectory entries, want 2", n)
			}
		})
	}

	t.Run("escape", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("not an asset"), 0o600); err != nil {
			t.Fatal(err)
		}
		bad := fileStatementTraj(t, t.TempDir(), "../secret")
		var stdout, stderr bytes.Buffer
		code := run([]string{"replay", "--agent", "swe-agent", "--trajectory", bad, "--after-step", "2", "--prepare-only", "--trajectory-assets", assets,
			"--run-id", "esc", "--state-dir", filepath.Join(dir, "state"), "--output-dir", filepath.Join(dir, "out")}, &stdout, &stderr)
		checkResultLine(t, stdout.Bytes())
		msg := gjson.GetBytes(stdout.Bytes(), "failure.message").Str
		if code != 2 || !strings.Contains(msg, `problem_statement names "../secret"`) || !strings.Contains(msg, "must stay inside") {
			t.Errorf("exit %d, message %q", code, msg)
		}
		if _, err := os.Stat(filepath.Join(dir, "out", "esc", "native", "prepared-prefix.traj")); err == nil {
			t.Error("a prefix was written")
		}
	})

	t.Run("not a directory", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := run([]string{"replay", "--agent", "swe-agent", "--trajectory", traj, "--after-step", "2", "--prepare-only", "--trajectory-assets", traj,
			"--state-dir", filepath.Join(dir, "state"), "--output-dir", filepath.Join(dir, "out")}, &stdout, &stderr)
		checkResultLine(t, stdout.Bytes())
		if msg := gjson.GetBytes(stdout.Bytes(), "failure.message").Str; code != 2 || !strings.Contains(msg, "is not a directory") {
			t.Errorf("exit %d, message %q", code, msg)
		}
	})
}
