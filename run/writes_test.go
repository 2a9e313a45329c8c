package run

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Writes through WriteFile and Edit are seen; inside the root they are not
// listed, outside (directly or through a symlink in the root) they are.
func TestWriteWatch(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	other := filepath.Join(base, "other")
	for _, d := range []string{root, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(other, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	w := WatchWrites(root)
	defer w.Stop()
	for _, p := range []string{filepath.Join(root, "a.txt"), filepath.Join(root, "..", "b.txt"), filepath.Join(root, "link", "c.txt"), filepath.Join(root, "a.txt")} {
		if _, err := WriteFile(p, []byte("x\n")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Edit(filepath.Join(base, "b.txt"), EditSpec{Old: "x", New: "y"}); err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(base, "b.txt"), filepath.Join(other, "c.txt")}
	if diff := cmp.Diff(want, w.Outside()); diff != "" {
		t.Errorf("outside (-want +got):\n%s", diff)
	}
	w.Stop()
	if _, err := WriteFile(filepath.Join(base, "d.txt"), nil); err != nil {
		t.Fatal(err)
	}
	if len(w.Outside()) != 2 {
		t.Errorf("a stopped watch still records: %v", w.Outside())
	}
}

// Two watches running side by side (two replays in one process): each
// one's writes into its own root are listed by neither, a write outside
// both by both.
func TestWriteWatchesSideBySide(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	wa, wb := WatchWrites(a), WatchWrites(b)
	defer wa.Stop()
	defer wb.Stop()
	for _, p := range []string{filepath.Join(a, "x"), filepath.Join(b, "y"), filepath.Join(base, "z")} {
		if _, err := WriteFile(p, []byte("1\n")); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{filepath.Join(base, "z")}
	for name, w := range map[string]*WriteWatch{"a": wa, "b": wb} {
		if diff := cmp.Diff(want, w.Outside()); diff != "" {
			t.Errorf("watch %s outside (-want +got):\n%s", name, diff)
		}
	}
}
