package workspace

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type entry struct {
	name, body, link string
	typ              byte
}

func writeTar(t *testing.T, w io.Writer, entries ...entry) {
	t.Helper()
	tw := tar.NewWriter(w)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: e.typ, Linkname: e.link}
		if e.typ == 0 {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestUntarStaysInside: hostile archives (a name that leaves the workspace,
// an absolute name, a file written through a symlink the archive made,
// a device) are refused, and nothing lands outside the destination.
func TestUntarStaysInside(t *testing.T) {
	outside := t.TempDir()
	for _, tc := range []struct {
		name    string
		entries []entry
		says    string
	}{
		{"dot-dot", []entry{{name: "../escape", body: "x"}}, "outside the workspace"},
		{"absolute", []entry{{name: "/tmp/escape", body: "x"}}, "outside the workspace"},
		{"through a symlink", []entry{{name: "link", typ: tar.TypeSymlink, link: outside}, {name: "link/escape", body: "x"}},
			"goes through the symlink link"},
		{"through a nested symlink", []entry{{name: "a/", typ: tar.TypeDir}, {name: "a/link", typ: tar.TypeSymlink, link: "../../.."},
			{name: "a/link/b/escape", body: "x"}}, "goes through the symlink a/link"},
		{"device", []entry{{name: "dev", typ: tar.TypeChar}}, "unsupported type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			writeTar(t, &buf, tc.entries...)
			err := Untar(&buf, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want %q", err, tc.says)
			}
			if left, _ := os.ReadDir(outside); len(left) != 0 {
				t.Fatalf("the archive wrote %v outside the workspace", left)
			}
		})
	}
}

// Agents' tools sort by modification time (Claude Code's Glob lists the
// newest first), so a fresh workspace keeps the times of its source.
func TestFreshKeepsModTimes(t *testing.T) {
	src, err := filepath.Abs("../../testdata/e2e/sessions/claude-code@2.1.197/repo.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	fromTar, fromDir := t.TempDir(), t.TempDir()
	if err := Fresh(src, fromTar); err != nil {
		t.Fatal(err)
	}
	if err := Fresh(fromTar, fromDir); err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{}
	ref := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", src, "-C", ref).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	filepath.Walk(ref, func(p string, info os.FileInfo, err error) error {
		rel, _ := filepath.Rel(ref, p)
		if rel != "." && info.Mode().IsRegular() {
			want[rel] = info.ModTime()
		}
		return nil
	})
	if len(want) == 0 {
		t.Fatal("the reference extraction has no files")
	}
	for _, dir := range []string{fromTar, fromDir} {
		for rel, mt := range want {
			info, err := os.Stat(filepath.Join(dir, rel))
			if err != nil {
				t.Fatal(err)
			}
			if !info.ModTime().Equal(mt) {
				t.Errorf("%s: mtime %v, tar gives %v", filepath.Join(dir, rel), info.ModTime(), mt)
			}
		}
	}
}

func TestKind(t *testing.T) {
	dir := t.TempDir()
	for name, want := range map[string]string{"a.tar.gz": "tar.gz", "a.TGZ": "tar.gz", "a.tar": "tar", "a.zip": ""} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, nil, 0o644)
		got, err := Kind(p)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("Kind(%s) = %q, %v", name, got, err)
		}
	}
	if k, err := Kind(dir); k != "dir" || err != nil {
		t.Errorf("Kind(dir) = %q, %v", k, err)
	}
	if _, err := Kind(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing source has a kind")
	}
}
