package replay

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay/toolenv"
	toolrun "github.com/pvisor/pvisor/run"
)

func requireEnforce(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("--policy enforce needs tool isolation (root)")
	}
	if _, err := toolrun.LandlockABI(); err != nil {
		t.Skipf("no Landlock here: %v", err)
	}
	if err := (toolrun.Isolation{Enabled: true}).Probe(); err != nil {
		t.Skipf("namespaces are not available here: %v", err)
	}
}

func addPatch(path string) string {
	return "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: " + path + "\n+hi\n*** End Patch\nEOF"
}

// TestPolicyEnforce: a shell write and an in-process (apply_patch) write
// to /etc are refused, the file is not created and the result says so;
// under observe the same in-process write outside the workspace happens
// and is recorded.
func TestPolicyEnforce(t *testing.T) {
	requireEnforce(t)
	dir := t.TempDir()
	shellX := "/etc/pvisor-enforce-shell-" + filepath.Base(dir)
	fileX := "/etc/pvisor-enforce-file-" + filepath.Base(dir)
	t.Cleanup(func() { os.Remove(shellX); os.Remove(fileX) })
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	traj := codexRollout(t, dir, "echo x > "+shellX, addPatch(fileX), "echo in > in.txt")
	req := &Request{Agent: "codex", Trajectory: traj, AfterStep: 3, Mode: ReplayOnly, Workspace: ws,
		RunID: "e", StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out"),
		Run: RunConfig{Policy: toolenv.PolicyEnforce}}
	res := Run(context.Background(), req)
	if res.Failure != nil {
		t.Fatalf("failure: %+v", res.Failure)
	}
	for _, p := range []string{shellX, fileX} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created under enforce", p)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "in.txt")); err != nil {
		t.Errorf("the workspace write was denied: %v", err)
	}
	if d, _ := res.Metadata["writes_denied"].([]string); !slices.Contains(d, fileX) {
		t.Errorf("writes_denied %v, want %s", res.Metadata["writes_denied"], fileX)
	}
	if _, ok := res.Metadata["writes_outside_workspace"]; ok {
		t.Errorf("a denied write recorded as made: %v", res.Metadata["writes_outside_workspace"])
	}
	m, _ := res.Metadata["run_options"].(map[string]any)
	if m["policy"] != "enforce" || m["policy_denies"] != "writes_denied" {
		t.Errorf("run_options %v", m)
	}
	calls := freshOutputs(t, filepath.Join(dir, "out", "e"))
	for i, want := range []string{"Permission denied", "Failed to write file", ""} {
		if want != "" && !strings.Contains(strings.ToLower(calls[i]), strings.ToLower(want)) {
			t.Errorf("call %d observation %q does not say the write was denied", i+1, calls[i])
		}
	}

	// observe: the in-process write outside the workspace happens and is
	// recorded (outside is a temp dir, not /etc).
	outside := filepath.Join(t.TempDir(), "x")
	traj2 := codexRollout(t, t.TempDir(), addPatch(outside))
	req2 := &Request{Agent: "codex", Trajectory: traj2, AfterStep: 1, Mode: ReplayOnly, Workspace: ws,
		RunID: "o", StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out"),
		Run: RunConfig{Policy: toolenv.PolicyObserve}}
	res2 := Run(context.Background(), req2)
	if res2.Failure != nil {
		t.Fatalf("observe failure: %+v", res2.Failure)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("observe: %v", err)
	}
	if w, _ := res2.Metadata["writes_outside_workspace"].([]string); !slices.Contains(w, outside) {
		t.Errorf("observe: writes_outside_workspace %v, want %s", res2.Metadata["writes_outside_workspace"], outside)
	}
}
