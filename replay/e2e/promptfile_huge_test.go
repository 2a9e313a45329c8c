//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/prompt"
	"github.com/pvisor/pvisor/result"
)

// TestContinueCodexHugePromptFile (issue 24): a boundary prompt file of the
// allowed maximum (1 MiB) makes the real codex CLI auto-compact after the
// first answer, whose usage counts the prompt's ~262k tokens; its next
// request carries a summary instead of the history. The run ends with a
// refusal that names the compaction and what to do, not an item mismatch.
func TestContinueCodexHugePromptFile(t *testing.T) {
	s := loadCodexSession(t)
	file := filepath.Join(t.TempDir(), "boundary.md")
	if err := os.WriteFile(file, []byte(strings.Repeat("w", prompt.MaxFileBytes)), 0o644); err != nil {
		t.Fatal(err)
	}
	enterLoopbackNetns(t)
	cr := s.continueAfter(t, 1, func(r *replay.Request) {
		r.Upstream, r.BoundaryUserPromptFile = replay.UpstreamRecorded, file
	})
	f := cr.res.Failure
	if f == nil || f.Category != result.ContinuationError || !strings.Contains(f.Message, "codex compacted its history") ||
		!strings.Contains(f.Message, "1048576-byte boundary prompt") {
		t.Fatalf("failure %+v, want the compaction named:\n%s", f, cr.diagnose())
	}
}
