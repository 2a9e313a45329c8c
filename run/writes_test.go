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
