//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/openhands"
)

// TestOpenHandsSDKReplay records a fresh V1 conversation with the installed
// openhands-sdk (its own agent, terminal and file editor, a scripted model,
// inside a loopback-only namespace) and replays it with pvisor's OpenHands
// semantics: every command and edit must give back exactly what OpenHands'
// tools returned. A new SDK release that changes a result text fails here.
//
// The SDK needs Python >= 3.12; the test runs when a venv
// $PVISOR_E2E_DIR/py/openhands-sdk@<version> exists and skips otherwise.
func TestOpenHandsSDKReplay(t *testing.T) {
	venvs, _ := filepath.Glob(filepath.Join(e2eDir(t), "py", "openhands-sdk@*", "bin", "python"))
	if len(venvs) == 0 {
		t.Skip("no openhands-sdk venv under $PVISOR_E2E_DIR/py (it needs Python >= 3.12: python3.12 -m venv .e2e/py/openhands-sdk@1.58.2 && pip install openhands-sdk==1.58.2 openhands-tools==1.58.2)")
	}
	enterLoopbackNetns(t)
	for _, py := range venvs {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(py))), func(t *testing.T) {
			rec, out, home := t.TempDir(), t.TempDir(), t.TempDir()
			gen := filepath.Join(projectRoot(t), "testdata", "trajectories", "openhands", "generate_ohsdk-1.58.2.py")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, py, gen, rec, out)
			cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "LANG=C.UTF-8",
				"LITELLM_LOCAL_MODEL_COST_MAP=True", "OPENHANDS_SUPPRESS_BANNER=1"}
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("generator: %v\n%s", err, b)
			}
			events, _ := filepath.Glob(filepath.Join(out, "*", "events", "event-*.json"))
			if len(events) == 0 {
				t.Fatal("the SDK wrote no events")
			}
			sort.Strings(events)
			var jsonl bytes.Buffer
			for _, e := range events {
				b, err := os.ReadFile(e)
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Compact(&jsonl, b); err != nil {
					t.Fatalf("%s: %v", e, err)
				}
				jsonl.WriteByte('\n')
			}
			tr, err := openhands.New().Decode(bytes.NewReader(jsonl.Bytes()), trajectory.Options{})
			if err != nil {
				t.Fatal(err)
			}
			steps := tr.Steps()
			if len(steps) < 10 || tr.Cwd != rec {
				t.Fatalf("%d steps, cwd %q", len(steps), tr.Cwd)
			}
			ws := t.TempDir()
			s, err := openhands.New().(trajectory.Replayer).NewToolSession(trajectory.ToolEnv{
				Workspace: ws, OriginalCwd: tr.Cwd, Env: cmd.Env[:3], LogDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, a := range steps[:len(steps)-1] { // the last is finish
				for i := range a.Calls {
					c := &a.Calls[i]
					f, err := s.Execute(ctx, a.Step, c)
					if err != nil {
						t.Fatalf("step %d: %v", a.Step, err)
					}
					if got := strings.ReplaceAll(f.Content, ws, rec); got != c.Observation.Content || f.IsError != c.Observation.IsError {
						t.Errorf("step %d %s %s:\nopenhands %q (error %v)\npvisor    %q (error %v)", a.Step, c.Name, c.Arguments,
							c.Observation.Content, c.Observation.IsError, got, f.IsError)
					}
				}
			}
		})
	}
}
