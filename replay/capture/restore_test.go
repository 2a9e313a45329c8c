package capture

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory/claude"
	"github.com/pvisor/pvisor/trajectory/codex"
	"github.com/pvisor/pvisor/trajectory/copilot"
	"github.com/pvisor/pvisor/trajectory/kimi"
	"github.com/pvisor/pvisor/trajectory/pi"
	"github.com/pvisor/pvisor/trajectory/session"
	"github.com/pvisor/pvisor/trajectory/session/sessiontest"
)

// captured captures a recorded session of store into a fresh store.
func captured(t *testing.T, s session.Store, dir string) (bundle string, m *Manifest) {
	t.Helper()
	_, loc := sessiontest.Recorded(t, s, dir)
	bundle, m, err := Capture(Options{Store: s, Root: loc.Root, ID: loc.ID, StoreDir: t.TempDir(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return bundle, m
}

func TestRestoreRecorded(t *testing.T) {
	for _, tt := range []struct {
		store session.Store
		dir   string
		place func(ws, id string) string // the main file, relative to the root
	}{
		{claude.Sessions(), claudeRec, func(ws, id string) string { return filepath.Join("projects", claude.ProjectKey(ws), id+".jsonl") }},
		{codex.Sessions(), "../../testdata/e2e/sessions/codex@0.171.0", nil},
		{pi.Sessions(), "../../testdata/e2e/sessions/pi@0.73.1", func(ws, id string) string {
			return filepath.Join("sessions", pi.SessionDir(ws))
		}},
	} {
		t.Run(tt.store.Agent(), func(t *testing.T) {
			bundle, m := captured(t, tt.store, tt.dir)
			before, err := Hash(bundle)
			if err != nil {
				t.Fatal(err)
			}
			// The workspace is reached through a symlink: the session records
			// and is keyed by its realpath.
			real := filepath.Join(t.TempDir(), "new.ws_dir")
			if err := os.Mkdir(real, 0o700); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(t.TempDir(), "link")
			mustSymlink(t, real, link)
			root := filepath.Join(t.TempDir(), "home", "state")
			r, err := Restore(RestoreOptions{Bundle: bundle, Store: tt.store, Root: root, Workspace: link, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if r.Cwd != real || r.Rewrites == 0 || r.Backup != "" || len(r.Files) != 1 {
				t.Errorf("Restore = %+v", r)
			}
			rel, _ := filepath.Rel(root, r.Main)
			switch {
			case tt.store.Agent() == "codex" && rel != filepath.FromSlash(m.Files[0].Path):
				t.Errorf("codex rollout restored to %s, want its recorded date path %s", rel, m.Files[0].Path)
			case tt.store.Agent() == "claude-code" && rel != tt.place(real, m.SessionID):
				t.Errorf("claude session restored to %s, want %s", rel, tt.place(real, m.SessionID))
			case tt.store.Agent() == "pi" && filepath.Dir(rel) != tt.place(real, m.SessionID):
				t.Errorf("pi session restored to %s, want it in %s", rel, tt.place(real, m.SessionID))
			}
			got, _ := os.ReadFile(r.Main)
			o, err := tt.store.Origin(bytes.NewReader(got))
			if err != nil || o.Cwd != real {
				t.Errorf("restored session records cwd %q (%v), want %s", o.Cwd, err, real)
			}
			// Rewriting back gives the bundle's bytes: only the cwd changed.
			var back bytes.Buffer
			if _, err := tt.store.Rewrite(&back, bytes.NewReader(got), real, m.OriginCwd); err != nil {
				t.Fatal(err)
			}
			orig, _ := os.ReadFile(filepath.Join(bundle, FilesDir, m.Files[0].Path))
			if !bytes.Equal(back.Bytes(), orig) {
				t.Errorf("restored session differs from the bundle in more than its cwd")
			}
			after, err := Hash(bundle)
			if err != nil || !equalMaps(before, after) {
				t.Errorf("the bundle changed during the restore: %v", err)
			}
			if ents, _ := os.ReadDir(root); len(ents) != 1 {
				t.Errorf("state directory holds %d entries after the restore, want only the session's tree", len(ents))
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestRestoreBacksUpAndSubagents: a restore over an earlier copy moves that
// copy to the recovery directory, and subagent transcripts go along.
func TestRestoreBacksUpAndSubagents(t *testing.T) {
	root, loc := claudeHome(t)
	bundle, _, err := Capture(Options{Store: claude.Sessions(), Root: root, ID: loc.ID, StoreDir: t.TempDir(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	target := filepath.Join(t.TempDir(), "claude")
	o := RestoreOptions{Bundle: bundle, Store: claude.Sessions(), Root: target, Workspace: ws, Now: now}
	first, err := Restore(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Files) != 2 || first.Backup != "" {
		t.Fatalf("first restore = %+v", first)
	}
	sub, _ := os.ReadFile(first.Files[1])
	if !strings.Contains(string(sub), `"cwd":"`+first.Cwd+`"`) {
		t.Errorf("subagent transcript not rewritten: %s", sub)
	}
	if err := os.WriteFile(first.Main, []byte("local edits\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	second, err := Restore(o)
	if err != nil {
		t.Fatal(err)
	}
	if second.Backup == "" || !strings.HasPrefix(second.Backup, filepath.Join(target, RecoveryDir)) {
		t.Fatalf("second restore made no backup: %+v", second)
	}
	rel, _ := filepath.Rel(target, first.Main)
	kept, err := os.ReadFile(filepath.Join(second.Backup, rel))
	if err != nil || string(kept) != "local edits\n" {
		t.Errorf("backup of the replaced session = %q, %v", kept, err)
	}
}

func TestRestoreRefusals(t *testing.T) {
	bundle, m := captured(t, codex.Sessions(), "../../testdata/e2e/sessions/codex@0.171.0")
	tests := []struct {
		name     string
		edit     func(t *testing.T, dir string)
		opts     func(o *RestoreOptions)
		category string
		want     string
	}{
		{"wrong agent", nil, func(o *RestoreOptions) { o.Store = pi.Sessions() }, result.ConfigurationError, "holds a codex session"},
		{"file over the limit", nil, func(o *RestoreOptions) { o.Limits = Limits{MaxFileBytes: 10, MaxFiles: 10} }, result.ConfigurationError, "over the 10-byte limit"},
		{"too many files", nil, func(o *RestoreOptions) { o.Limits = Limits{MaxFileBytes: 1 << 30, MaxFiles: -1} }, result.ConfigurationError, "more than the -1"},
		{"tampered file", func(t *testing.T, dir string) {
			appendTo(t, filepath.Join(dir, FilesDir, m.Files[0].Path), "x")
		}, nil, result.ConfigurationError, "does not match its manifest"},
		{"dot-dot entry", func(t *testing.T, dir string) {
			editManifest(t, dir, func(mm *Manifest) { mm.Files[0].Path = "../../etc/passwd" })
		}, nil, result.ConfigurationError, "outside the bundle"},
		{"symlinked file", func(t *testing.T, dir string) {
			p := filepath.Join(dir, FilesDir, m.Files[0].Path)
			data, _ := os.ReadFile(p)
			other := filepath.Join(t.TempDir(), "x")
			if err := os.WriteFile(other, data, 0o600); err != nil || os.Remove(p) != nil {
				t.Fatal(err)
			}
			mustSymlink(t, other, p)
		}, nil, result.ConfigurationError, "bundle file"},
		{"not a bundle", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ManifestName)) }, nil, result.ConfigurationError, "not a capture bundle"},
		{"manifest claims a huge file", func(t *testing.T, dir string) {
			editManifest(t, dir, func(mm *Manifest) { mm.Files[0].Size = 1 << 40 })
		}, nil, result.ConfigurationError, "outside the 67108864-byte limit"},
		{"bad id in the manifest", func(t *testing.T, dir string) {
			editManifest(t, dir, func(mm *Manifest) { mm.SessionID = "a/b" })
		}, nil, result.ConfigurationError, "not a plain id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			if err := os.CopyFS(dir, os.DirFS(bundle)); err != nil {
				t.Fatal(err)
			}
			if tt.edit != nil {
				tt.edit(t, dir)
			}
			root := filepath.Join(t.TempDir(), "codex")
			o := RestoreOptions{Bundle: dir, Store: codex.Sessions(), Root: root, Workspace: t.TempDir(), Now: now}
			if tt.opts != nil {
				tt.opts(&o)
			}
			_, err := Restore(o)
			if err == nil || Category(err) != tt.category || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Restore = %v (%s), want %s containing %q", err, Category(err), tt.category, tt.want)
			}
			if _, err := os.Stat(root); err == nil {
				t.Errorf("a refused restore created %s", root)
			}
		})
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func editManifest(t *testing.T, dir string, edit func(*Manifest)) {
	t.Helper()
	p := filepath.Join(dir, ManifestName)
	data, _ := os.ReadFile(p)
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(&m)
	data, _ = json.Marshal(m)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreCopiesUserFiles: the copies of the user's files a Kimi or
// Copilot session directory keeps are restored byte for byte: a binary
// file with no newline in its first 17 MiB (over the line rewriter's cap)
// and a JSON-lines copy that looks like a session record naming the
// recorded cwd, while the session's own log is rewritten.
func TestRestoreCopiesUserFiles(t *testing.T) {
	for _, tt := range []struct {
		store session.Store
		dir   string
		copy  string // a directory of user-file copies, relative to the session directory
	}{
		{kimi.Sessions(), "../../testdata/e2e/sessions/kimi@2.1.0", "file-history"},
		{copilot.Sessions(), "../../testdata/e2e/sessions/copilot@1.0.102", "checkpoints"},
	} {
		t.Run(tt.store.Agent(), func(t *testing.T) {
			_, loc := sessiontest.Recorded(t, tt.store, tt.dir)
			main := filepath.Join(loc.Root, loc.Main)
			o, err := tt.store.Origin(mustOpen(t, main))
			if err != nil {
				t.Fatal(err)
			}
			sdir := filepath.Dir(main)
			if tt.store.Agent() == "kimi" {
				sdir = filepath.Dir(filepath.Dir(sdir)) // agents/main/wire.jsonl
			}
			big := bytes.Repeat([]byte{0xff, 0x00, 'x'}, 17<<20/3+1)
			lookalike := []byte(`{"type":"runtime.set_binding","workspaceId":"` + o.Cwd + `"}` + "\n" +
				`{"type":"session.start","data":{"context":{"cwd":"` + o.Cwd + `"}}}` + "\n")
			sessiontest.WriteFile(t, filepath.Join(sdir, tt.copy, "big.bin"), big)
			sessiontest.WriteFile(t, filepath.Join(sdir, tt.copy, "notes.jsonl"), lookalike)
			bundle, _, err := Capture(Options{Store: tt.store, Root: loc.Root, ID: loc.ID, StoreDir: t.TempDir(), Now: now})
			if err != nil {
				t.Fatal(err)
			}
			ws := t.TempDir()
			r, err := Restore(RestoreOptions{Bundle: bundle, Store: tt.store, Root: filepath.Join(t.TempDir(), "state"), Workspace: ws, Now: now})
			if err != nil {
				t.Fatalf("restore: %v", err)
			}
			if r.Rewrites == 0 {
				t.Error("the session's own log was not rewritten")
			}
			found := 0
			for _, f := range r.Files {
				var want []byte
				switch filepath.Base(f) {
				case "big.bin":
					want = big
				case "notes.jsonl":
					want = lookalike
				default:
					continue
				}
				found++
				if got, _ := os.ReadFile(f); !bytes.Equal(got, want) {
					t.Errorf("%s was not restored byte for byte", f)
				}
			}
			if found != 2 {
				t.Errorf("restored %d of the 2 user-file copies: %v", found, r.Files)
			}
		})
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
