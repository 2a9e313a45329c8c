//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/result"
)

// TestContinueCodexSafe: --safe replays the recorded Codex session's
// prefix and continues the real CLI on a loopback model, in the overlay
// (whose changes are dropped: the workspace is as it was unpacked), with
// the tools' egress allowed to the model host only and --policy enforce;
// metadata.safe says what applied.
func TestContinueCodexSafe(t *testing.T) {
	s := loadCodexSession(t)
	const step = 3
	// The model listens inside the loopback namespace: the overlay worker
	// (and the bridge in it) is forked from this locked thread, so it
	// lives there, not where the test's other threads are.
	enterLoopbackNetns(t)
	fake := serveFakeModel(t, "sk-pvisor-e2e-SAFE-KEY")
	var ws string
	cr := s.continueAfter(t, step, func(r *replay.Request) {
		r.Upstream, r.MaxSteps, r.Run.Safe = "openai-responses", step+1, true
		ws = r.Workspace
		fake.Store(fakemodel.New(s.manifest.Script.Expand(map[string]string{"CWD": r.Workspace}), fakemodel.WithReplyOffset(0)))
	})
	res := cr.res
	if res.Failure != nil || res.AgentStatus != result.AgentMaxSteps {
		t.Fatalf("want max_steps after 1 live step:\n%s", cr.diagnose())
	}
	if len(fake.Load().Requests()) == 0 {
		t.Fatalf("no model request reached the loopback model\n%s", cr.diagnose())
	}
	safe, _ := res.Metadata["safe"].(map[string]any)
	net, _ := safe["overlaynet"].(map[string]any)
	allow := fmt.Sprint(net["allow"]) // []any once through the overlay worker's JSON
	host := strings.TrimSuffix(strings.TrimPrefix(os.Getenv("OPENAI_BASE_URL"), "http://"), "/v1")
	if safe["policy"] != "enforce" || net["policy"] != "allowlist" || allow != "["+host+"]" {
		t.Errorf("metadata.safe %v, want enforce and an allowlist of %s", res.Metadata["safe"], host)
	}
	if ov, _ := safe["overlayfs"].(map[string]any); ov["commit"] != "drop" {
		t.Errorf("metadata.safe.overlayfs %v", safe["overlayfs"])
	}
	// drop: the workspace is the unpacked initial repo, byte for byte.
	fresh := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", filepath.Join(s.dir, s.manifest.Files["initial_repo"]), "-C", fresh).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := exec.Command("diff", "-r", fresh, ws).CombinedOutput(); err != nil {
		t.Errorf("the workspace changed under --safe (commit drop):\n%s", out)
	}
}
