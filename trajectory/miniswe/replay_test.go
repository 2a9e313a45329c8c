package miniswe

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

// The recordings under testdata/recorded are real runs of mini-swe-agent
// 1.17.5 (text actions, format mini-swe-agent-1) and 2.4.6 (tool calls,
// mini-swe-agent-1.1) through the same greeter task against pvisor's fake
// model: a parallel batch, stderr, non-ASCII and "\r" output, an elided
// long output, a failing command, a timeout (environment.timeout 2) and the
// submission; 1.17.5 also a format error.

// replayAll re-runs every call of steps 1..n of a recording in a fresh
// copy of its initial repo.
func replayAll(t *testing.T, version string, n int) (*trajectory.Trajectory, map[string]trajectory.Fresh, string) {
	t.Helper()
	dir := filepath.Join("testdata", "recorded", version)
	src := filepath.Join(dir, "last_mini_run.traj.json")
	_, tr := formattest.DecodeFile(t, New(), src)
	if err := Format.(trajectory.RebuildChecker).CheckRebuild(tr); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", filepath.Join(dir, "repo.tar.gz"), "-C", ws).CombinedOutput(); err != nil {
		t.Fatalf("untar: %v\n%s", err, out)
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + t.TempDir(), "LANG=C.UTF-8", "TERM=dumb", "GIT_CONFIG_NOSYSTEM=1"}
	sess, err := Format.(trajectory.Replayer).NewToolSession(trajectory.ToolEnv{Workspace: ws, Env: env, LogDir: t.TempDir(), Trajectory: tr})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	fresh := map[string]trajectory.Fresh{}
	for _, a := range tr.Steps() {
		if a.Step > n {
			break
		}
		for i := range a.Calls {
			f, err := sess.Execute(context.Background(), a.Step, &a.Calls[i])
			if err != nil {
				t.Fatalf("step %d: %v", a.Step, err)
			}
			fresh[a.Calls[i].ID] = f
		}
	}
	return tr, fresh, src
}

// TestReplayRecorded: re-running a real recording reproduces every
// observation exactly, and the rebuilt trajectory is byte for byte the
// recorded prefix (mini's layout kept, timestamps included).
func TestReplayRecorded(t *testing.T) {
	for _, tc := range []struct {
		version  string
		lastStep int // the step before the submission
		steps    int
	}{
		{"1.17.5", 7, 8},
		{"2.4.6", 6, 7},
	} {
		t.Run(tc.version, func(t *testing.T) {
			tr, fresh, src := replayAll(t, tc.version, tc.lastStep)
			if got := len(tr.Steps()); got != tc.steps {
				t.Fatalf("%d steps, want %d", got, tc.steps)
			}
			var timedOut, failedCalls, elided int
			for _, a := range tr.Steps()[:tc.lastStep] {
				for _, c := range a.Calls {
					f := fresh[c.ID]
					if f.Content != c.Observation.Content || f.IsError != c.Observation.IsError {
						t.Errorf("step %d %s: fresh (error %v)\n%q\nrecorded (error %v)\n%q", a.Step, c.ID, f.IsError, f.Content, c.Observation.IsError, c.Observation.Content)
					}
					if f.ExitCode == nil {
						timedOut++
					} else if *f.ExitCode != 0 {
						failedCalls++
					}
					if strings.Contains(f.Content, "elided") {
						elided++
					}
				}
			}
			if timedOut != 1 || failedCalls != 1 || elided != 1 {
				t.Errorf("%d timed out, %d failed, %d elided: the recording no longer covers those cases", timedOut, failedCalls, elided)
			}
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			var want, got bytes.Buffer
			if err := Format.WritePrefix(&want, bytes.NewReader(data), int64(len(data)), tr, tc.lastStep); err != nil {
				t.Fatal(err)
			}
			if err := Format.(trajectory.Replayer).Rebuild(&got, bytes.NewReader(data), int64(len(data)), tr, tc.lastStep, fresh); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("rebuilt trajectory differs from the recorded prefix:\n%s", firstDiff(got.String(), want.String()))
			}
		})
	}
}

func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-200)
	return "got  …" + a[lo:min(len(a), i+200)] + "\nwant …" + b[lo:min(len(b), i+200)]
}
