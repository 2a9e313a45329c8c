//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/prompt"
	"github.com/pvisor/pvisor/result"
	codexfmt "github.com/pvisor/pvisor/trajectory/codex"
)

// TestContinueCodexPromptFile continues the real codex CLI through the fake
// model with a boundary prompt file: its {{KEY}} placeholders filled from
// an argument and the built-ins, its !`command` run in the replayed
// workspace, and the resolved text reaches the model right after O′N;
// only its digest is on disk.
func TestContinueCodexPromptFile(t *testing.T) {
	s := loadCodexSession(t)
	const step = 3
	fake := serveFakeModel(t, "sk-pvisor-e2e-PROMPTFILE-KEY")
	file := filepath.Join(t.TempDir(), "boundary.md")
	if err := os.WriteFile(file, []byte("Ticket {{TICKET}} for {{AGENT}}. Files here: !`ls | sort | tr '\\n' ' '`"), 0o644); err != nil {
		t.Fatal(err)
	}
	enterLoopbackNetns(t)
	cr := s.continueAfter(t, step, func(r *replay.Request) {
		r.Upstream, r.BoundaryUserPromptFile, r.MaxSteps = "openai-responses", file, step+1
		r.PromptArgs = []prompt.Arg{{Key: "TICKET", Value: "PVISOR-E2E-TICKET-5d2e"}}
		fake.Store(fakemodel.New(s.manifest.Script.Expand(map[string]string{"CWD": r.Workspace}), fakemodel.WithReplyOffset(0))) // the recorded next reply answers step N
	})
	res := cr.res
	if res.Failure != nil || res.AgentStatus != result.AgentMaxSteps {
		t.Fatalf("want max_steps after 1 live step:\n%s", cr.diagnose())
	}
	bp := res.Metadata["boundary_user_prompt"].(map[string]any)
	if bp["injected"] != true || bp["expanded"] != true {
		t.Fatalf("boundary_user_prompt metadata %v", bp)
	}
	reqs := fake.Load().Requests()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	at := len(inputItems(s.requests[codexfmt.New().PrefixModelTurns(s.traj, step)].Body))
	want := gjson.GetBytes(reqs[0].Body, "input").Array()[at].Get("content.0.text").Str
	if !bytes.HasPrefix([]byte(want), []byte("Ticket PVISOR-E2E-TICKET-5d2e for codex. Files here: ")) || len(want) < 60 {
		t.Fatalf("item %d of the first request is %q, want the resolved prompt", at, want)
	}
	if bp["sha256"] != sha256Hex(want) {
		t.Errorf("recorded sha256 %v is not that of the injected text %q", bp["sha256"], want)
	}
	for _, dir := range []string{cr.state, cr.out} {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			if data, _ := os.ReadFile(p); bytes.Contains(data, []byte("PVISOR-E2E-TICKET-5d2e")) {
				t.Errorf("%s holds the prompt text", p)
			}
			return nil
		})
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
