package agents

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/pvisor/pvisor/trajectory/session"
)

// unbranched are the stores fork --after-step does not file a rebuilt
// session in: Kimi's wire log records no session id (its directory names
// it), so a rebuilt log cannot say which session it is.
var unbranched = map[string]bool{"kimi": true}

// TestBranchersMatchRecordings: for every session recorded with a real
// CLI, FileID reads its id from the first line and File names the path the
// CLI wrote it to; NewID makes ids of the same shape, never twice the same.
func TestBranchersMatchRecordings(t *testing.T) {
	dirs, _ := filepath.Glob("../../testdata/e2e/sessions/*@*")
	roots := map[string]string{"claude-code": ".claude", "codex": ".codex", "pi": filepath.Join(".pi", "agent"), "copilot": ".copilot"}
	uuidRe := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	tested := 0
	for _, dir := range dirs {
		var m struct {
			Agent      string            `json:"agent"`
			NativePath string            `json:"native_path"`
			RepoPath   string            `json:"repo_path"`
			SessionID  string            `json:"session_id"`
			Files      map[string]string `json:"files"`
		}
		raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		s, ok := Sessions(m.Agent)
		if !ok {
			continue // OpenCode keeps its sessions in SQLite
		}
		b, ok := s.(session.Brancher)
		if !ok && unbranched[m.Agent] {
			continue
		}
		if !ok {
			t.Errorf("%s sessions cannot be branched", m.Agent)
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, m.Files["session"]))
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := bytes.Cut(data, []byte("\n"))
			if got := b.FileID(first); got != m.SessionID {
				t.Errorf("FileID = %q, want %q", got, m.SessionID)
			}
			rel, err := b.File(first, m.RepoPath, m.SessionID)
			if err != nil || filepath.Join(roots[m.Agent], rel) != m.NativePath {
				t.Errorf("File = %s (%v), want the CLI's %s", filepath.Join(roots[m.Agent], rel), err, m.NativePath)
			}
			a, c := b.NewID(), b.NewID()
			if !uuidRe.MatchString(a) || a == c || session.CheckID(a) != nil {
				t.Errorf("NewID = %q, %q", a, c)
			}
		})
		tested++
	}
	if tested < 3 {
		t.Fatalf("only %d recordings checked", tested)
	}
}
