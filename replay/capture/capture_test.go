package capture

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory/claude"
	"github.com/pvisor/pvisor/trajectory/codex"
	"github.com/pvisor/pvisor/trajectory/pi"
	"github.com/pvisor/pvisor/trajectory/session"
	"github.com/pvisor/pvisor/trajectory/session/sessiontest"
)

const claudeRec = "../../testdata/e2e/sessions/claude-code@2.1.332"

var now = func() time.Time { return time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC) }

// claudeHome lays the real Claude recording out in a fresh HOME, with a
// subagent transcript next to it, as the CLI does.
func claudeHome(t *testing.T) (root string, loc *session.Located) {
	t.Helper()
	_, loc = sessiontest.Recorded(t, claude.Sessions(), claudeRec)
	sub := filepath.Join(loc.Root, filepath.Dir(loc.Main), loc.ID, "subagents", "agent-a1.jsonl")
	sessiontest.WriteFile(t, sub, []byte(`{"cwd":"/tmp/pvisor-e2e/claude-code/repo","isSidechain":true}`+"\n"))
	return loc.Root, loc
}

func TestCaptureRecorded(t *testing.T) {
	for _, tt := range []struct {
		store session.Store
		dir   string
		cwd   string
		ver   string
	}{
		{claude.Sessions(), claudeRec, "/tmp/pvisor-e2e/claude-code/repo", "2.1.332"},
		{codex.Sessions(), "../../testdata/e2e/sessions/codex@0.171.0", "/tmp/pvisor-e2e/codex/repo", "0.171.0"},
		{pi.Sessions(), "../../testdata/e2e/sessions/pi@0.73.1", "/tmp/pvisor-e2e/pi/repo", ""},
	} {
		t.Run(tt.store.Agent(), func(t *testing.T) {
			home, loc := sessiontest.Recorded(t, tt.store, tt.dir)
			store := filepath.Join(t.TempDir(), "store")
			dir, m, err := Capture(Options{Store: tt.store, Root: loc.Root, ID: loc.ID, StoreDir: store, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if dir != filepath.Join(store, tt.store.Agent(), loc.ID) || m.Agent != tt.store.Agent() || m.SessionID != loc.ID ||
				m.OriginCwd != tt.cwd || m.CLIVersion != tt.ver || !m.CreatedAt.Equal(now()) || len(m.Files) != 1 {
				t.Errorf("Capture = %s, %+v", dir, m)
			}
			orig, _ := os.ReadFile(filepath.Join(loc.Root, loc.Main))
			got, _ := os.ReadFile(filepath.Join(dir, FilesDir, m.Files[0].Path))
			if !bytes.Equal(orig, got) || m.Files[0].Size != int64(len(orig)) {
				t.Errorf("the bundle's copy differs from the session file")
			}
			loaded, err := Load(dir)
			if err != nil || loaded.Files[0].SHA256 != m.Files[0].SHA256 {
				t.Errorf("Load = %+v, %v", loaded, err)
			}
			_ = home
		})
	}
}

func TestCaptureSubagentsAndRecapture(t *testing.T) {
	root, loc := claudeHome(t)
	store := t.TempDir()
	o := Options{Store: claude.Sessions(), Root: root, ID: loc.ID, StoreDir: store, Now: now}
	dir, m, err := Capture(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 2 || m.Files[1].Role != "subagent" || !strings.HasSuffix(m.Files[1].Path, loc.ID+"/subagents/agent-a1.jsonl") {
		t.Fatalf("files = %+v", m.Files)
	}
	// The session grew (a resume); capturing again replaces the bundle.
	f, _ := os.OpenFile(filepath.Join(root, loc.Main), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"type":"user","cwd":"/w"}` + "\n")
	f.Close()
	if _, m2, err := Capture(o); err != nil || m2.Files[0].Size != m.Files[0].Size+int64(len(`{"type":"user","cwd":"/w"}`+"\n")) {
		t.Fatalf("recapture = %+v, %v", m2, err)
	}
	if _, err := Load(dir); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(store, "claude-code"))
	if all, _ := os.ReadDir(store); len(entries) != 1 || len(all) != 2 {
		t.Errorf("store holds %v and %v; want the one bundle and the marker, no temp or old copies", entries, all)
	}
}

func TestCaptureRefusals(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(t *testing.T, root string, loc *session.Located) Options
		category string
		msg      string
	}{
		{"symlinked session file", func(t *testing.T, root string, loc *session.Located) Options {
			p := filepath.Join(root, loc.Main)
			os.Rename(p, p+".real")
			mustSymlink(t, p+".real", p)
			return Options{}
		}, result.TrajectoryError, "symlink"},
		{"symlinked subagent", func(t *testing.T, root string, loc *session.Located) Options {
			p := filepath.Join(root, filepath.Dir(loc.Main), loc.ID, "subagents", "agent-b2.jsonl")
			mustSymlink(t, "/etc/passwd", p)
			return Options{}
		}, result.TrajectoryError, "symlink"},
		{"symlinked subagents directory", func(t *testing.T, root string, loc *session.Located) Options {
			p := filepath.Join(root, filepath.Dir(loc.Main), loc.ID, "subagents")
			os.Rename(p, p+".real")
			mustSymlink(t, p+".real", p)
			return Options{}
		}, result.TrajectoryError, "symlink"},
		{"file over the size limit", func(t *testing.T, root string, loc *session.Located) Options {
			return Options{Limits: Limits{MaxFileBytes: 1000, MaxFiles: 10}}
		}, result.TrajectoryError, "over the 1000-byte limit"},
		{"too many files", func(t *testing.T, root string, loc *session.Located) Options {
			return Options{Limits: Limits{MaxFileBytes: 1 << 20, MaxFiles: 1}}
		}, result.TrajectoryError, "more than the 1"},
		{"unknown id", func(t *testing.T, root string, loc *session.Located) Options {
			return Options{ID: "0000"}
		}, result.TrajectoryError, "not found"},
		{"id with a path", func(t *testing.T, root string, loc *session.Located) Options {
			return Options{ID: "../" + loc.ID}
		}, result.ConfigurationError, "not a plain id"},
		{"store that is not a store", func(t *testing.T, root string, loc *session.Located) Options {
			dir := t.TempDir()
			sessiontest.WriteFile(t, filepath.Join(dir, "notes.txt"), []byte("mine"))
			return Options{StoreDir: dir}
		}, result.ConfigurationError, "not a capture store"},
		{"bundle path taken by something else", func(t *testing.T, root string, loc *session.Located) Options {
			dir := t.TempDir()
			if err := OpenStore(dir); err != nil {
				t.Fatal(err)
			}
			sessiontest.WriteFile(t, filepath.Join(dir, "claude-code", loc.ID, "x"), []byte("mine"))
			return Options{StoreDir: dir}
		}, result.ConfigurationError, "not a capture bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, loc := claudeHome(t)
			o := tt.setup(t, root, loc)
			o.Store, o.Root, o.Now = claude.Sessions(), root, now
			if o.ID == "" {
				o.ID = loc.ID
			}
			if o.StoreDir == "" {
				o.StoreDir = filepath.Join(t.TempDir(), "store")
			}
			_, _, err := Capture(o)
			if err == nil || Category(err) != tt.category || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Capture = %v (%s); want %s containing %q", err, Category(err), tt.category, tt.msg)
			}
			// Nothing but the store's own marker was written.
			filepath.WalkDir(o.StoreDir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && filepath.Base(p) != StoreMarker && tt.name != "store that is not a store" && tt.name != "bundle path taken by something else" {
					t.Errorf("capture left %s behind", p)
				}
				if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), ".capture-") {
					t.Errorf("capture left its temp dir %s", p)
				}
				return nil
			})
		})
	}
}

func TestLoadRefusesTamperedBundles(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, dir string, m *Manifest)
		msg    string
	}{
		{"changed byte", func(t *testing.T, dir string, m *Manifest) {
			p := filepath.Join(dir, FilesDir, m.Files[0].Path)
			b, _ := os.ReadFile(p)
			b[10] ^= 1
			os.WriteFile(p, b, 0o600)
		}, "does not match its manifest"},
		{"extra file", func(t *testing.T, dir string, m *Manifest) {
			sessiontest.WriteFile(t, filepath.Join(dir, FilesDir, "extra.jsonl"), []byte("{}\n"))
		}, "does not list"},
		{"path outside", func(t *testing.T, dir string, m *Manifest) {
			m.Files[0].Path = "../../escape.jsonl"
			os.Remove(filepath.Join(dir, ManifestName))
			if err := writeManifest(dir, m); err != nil {
				t.Fatal(err)
			}
		}, "outside the bundle"},
		{"symlinked file", func(t *testing.T, dir string, m *Manifest) {
			p := filepath.Join(dir, FilesDir, m.Files[0].Path)
			os.Rename(p, p+".x")
			mustSymlink(t, p+".x", p)
		}, "bundle file"},
		{"no manifest", func(t *testing.T, dir string, m *Manifest) {
			os.Remove(filepath.Join(dir, ManifestName))
		}, "not a capture bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, loc := claudeHome(t)
			dir, m, err := Capture(Options{Store: claude.Sessions(), Root: root, ID: loc.ID, StoreDir: t.TempDir(), Now: now})
			if err != nil {
				t.Fatal(err)
			}
			tt.tamper(t, dir, m)
			if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Load = %v, want an error containing %q", err, tt.msg)
			}
		})
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestCaptureRecordsVia: how an exported bundle was made (OpenCode's CLI
// export) is in its manifest and survives Load; file copies have none.
func TestCaptureRecordsVia(t *testing.T) {
	for _, via := range []*Via{nil, {Method: "export", Tool: "opencode", Version: "1.18.33"}} {
		_, loc := sessiontest.Recorded(t, claude.Sessions(), claudeRec)
		dir, _, err := Capture(Options{Store: claude.Sessions(), Root: loc.Root, ID: loc.ID, StoreDir: t.TempDir(), Via: via, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(filepath.Join(dir, ManifestName))
		loaded, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case via == nil && (loaded.Via != nil || bytes.Contains(raw, []byte(`"via"`))):
			t.Errorf("a file copy records via: %s", raw)
		case via != nil && (loaded.Via == nil || *loaded.Via != *via):
			t.Errorf("Load's via = %+v, want %+v", loaded.Via, via)
		}
	}
}
