package capture

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/trajectory/claude"
)

// BenchmarkRestore restores a ~32 MiB Claude session (the real recording
// repeated) into a fresh state directory; BenchmarkRestoreBaseline copies
// the same bytes with io.Copy. The ratio is what hash checks, the cwd
// rewrite and staging cost over a plain copy.
func BenchmarkRestore(b *testing.B) {
	bundle := bigBundle(b)
	ws := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		root := filepath.Join(b.TempDir(), "claude")
		if _, err := Restore(RestoreOptions{Bundle: bundle, Store: claude.Sessions(), Root: root, Workspace: ws}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRestoreBaseline(b *testing.B) {
	bundle := bigBundle(b)
	m, err := Load(bundle)
	if err != nil {
		b.Fatal(err)
	}
	src := filepath.Join(bundle, FilesDir, m.Files[0].Path)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in, err := os.Open(src)
		if err != nil {
			b.Fatal(err)
		}
		out, err := os.Create(filepath.Join(b.TempDir(), "copy.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			b.Fatal(err)
		}
		if err := out.Sync(); err != nil {
			b.Fatal(err)
		}
		out.Close()
		in.Close()
	}
}

// bigBundle captures the Claude recording repeated to ~32 MiB.
func bigBundle(b *testing.B) string {
	b.Helper()
	rec, err := os.ReadFile(filepath.Join(claudeRec, "d0465159-22d9-4f2c-b1b3-3d55774e8b6c.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	root := filepath.Join(b.TempDir(), "claude")
	path := filepath.Join(root, "projects", "-tmp-pvisor-e2e-claude-code-repo", "d0465159-22d9-4f2c-b1b3-3d55774e8b6c.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		b.Fatal(err)
	}
	big := bytes.Repeat(rec, (32<<20)/len(rec)+1)
	if err := os.WriteFile(path, big, 0o600); err != nil {
		b.Fatal(err)
	}
	dir, _, err := Capture(Options{Store: claude.Sessions(), Root: root, ID: "d0465159-22d9-4f2c-b1b3-3d55774e8b6c", StoreDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(big)))
	return dir
}
