package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	toolrun "github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/run/containertest"
)

// TestReplayContainerTOML: [run] executor = "container" with a rootfs
// relative to the config replays the Codex call in it, exit 0, and the
// result line records the executor and the root's absolute path.
func TestReplayContainerTOML(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("--executor container needs root")
	}
	if err := (toolrun.Isolation{Enabled: true}).Probe(); err != nil {
		t.Skipf("namespaces are not available here: %v", err)
	}
	bb := containertest.Busybox(t)
	dir := t.TempDir()
	if err := os.Symlink(bb, filepath.Join(dir, "root")); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "a.txt"), nil, 0o644)
	traj := filepath.Join(dir, "traj.jsonl")
	os.WriteFile(traj, []byte(codexBase), 0o644)
	cfg := "[replay]\nagent = \"codex\"\ntrajectory = \"traj.jsonl\"\nafter_step = 1\nreplay_only = true\nallow_untested_version = true\n" +
		"workspace = \"ws\"\nstate_dir = \"state\"\noutput_dir = \"out\"\nrun_id = \"r\"\n[run]\nexecutor = \"container\"\nrootfs = \"root\"\n"
	os.WriteFile(filepath.Join(dir, "r.toml"), []byte(cfg), 0o600)
	var stdout, stderr bytes.Buffer
	code := run([]string{"replay", "--config", filepath.Join(dir, "r.toml")}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	var res struct {
		Metadata struct {
			RunOptions struct {
				Executor  string
				Container struct{ Rootfs string }
			} `json:"run_options"`
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if ro := res.Metadata.RunOptions; ro.Executor != "container" || ro.Container.Rootfs != filepath.Join(dir, "root") {
		t.Errorf("run_options %+v", ro)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "out", "r", "observation-comparison.json"))
	var comps []struct {
		Exact bool
		Diff  string
	}
	json.Unmarshal(data, &comps)
	// ls of the workspace, in the container; the duration may differ.
	if len(comps) != 1 || !comps[0].Exact && !strings.Contains(comps[0].Diff, `+{"output":"a.txt\n"`) {
		t.Errorf("the call's observation differs: %s", data)
	}
}
