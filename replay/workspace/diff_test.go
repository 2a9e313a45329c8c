package workspace

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestDiffGolden changes a small tree every way a continuation can and
// compares the diff with testdata/workspace.diff (-update rewrites it).
func TestDiffGolden(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# Greeter\n\nSays hello.\n")
	write("src/main.py", "print('helo')\n")
	write("gone.txt", "bye\n")
	write("logo.png", "\x89PNG\x00\x01")
	write(".git/HEAD", "ref: refs/heads/main\n")
	os.Symlink("README.md", filepath.Join(dir, "link"))
	before, err := Take(dir, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	write("src/main.py", "print('hello')\n")
	write("NOTES.md", "# Notes\n")
	os.Remove(filepath.Join(dir, "gone.txt"))
	write("logo.png", "\x89PNG\x00\x02\x03")
	write(".git/HEAD", "ref: refs/heads/fix\n")
	os.Chmod(filepath.Join(dir, "README.md"), 0o755)
	os.Remove(filepath.Join(dir, "link"))
	os.Symlink("NOTES.md", filepath.Join(dir, "link"))
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644) // never opened
	got, st, err := before.Diff()
	if err != nil {
		t.Fatal(err)
	}
	if st.Added != 1 || st.Deleted != 1 || st.Modified != 4 || st.Binary != 1 {
		t.Errorf("stats %+v", st)
	}
	golden := filepath.Join("testdata", "workspace.diff")
	if *update {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(golden, []byte(got), 0o644)
	}
	want, _ := os.ReadFile(golden)
	if got != string(want) {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
}

// TestDiffBounds: a diff never grows past its limits however much changed.
func TestDiffBounds(t *testing.T) {
	dir := t.TempDir()
	for i := range 40 {
		os.WriteFile(filepath.Join(dir, "f"+string(rune('a'+i%26))+strings.Repeat("x", i/26)), []byte("a\n"), 0o644)
	}
	big := strings.Repeat("line\n", 3000)
	os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big), 0o644)
	lim := Limits{MaxFiles: 30, MaxFileBytes: 1 << 20, MaxKeptBytes: 1 << 20, MaxDiffLines: 1000, MaxDiffBytes: 400}
	before, _ := Take(dir, lim)
	for i := range 40 {
		os.WriteFile(filepath.Join(dir, "f"+string(rune('a'+i%26))+strings.Repeat("x", i/26)), []byte("b\n"), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big+"more\n"), 0o644)
	got, st, err := before.Diff()
	if err != nil {
		t.Fatal(err)
	}
	if !st.Truncated || st.Skipped == 0 || len(got) > 400+300 || !strings.Contains(got, "diff cut at 400 bytes") {
		t.Errorf("stats %+v, %d bytes:\n%s", st, len(got), got)
	}
}

// TestDiffLargeFile: a file over MaxFileBytes is compared by hash and
// summarised by its sizes, not called binary.
func TestDiffLargeFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "big.log"), []byte(strings.Repeat("x\n", 100)), 0o644)
	before, _ := Take(dir, Limits{MaxFiles: 10, MaxFileBytes: 50, MaxKeptBytes: 1 << 20, MaxDiffLines: 100, MaxDiffBytes: 1 << 10})
	os.WriteFile(filepath.Join(dir, "big.log"), []byte(strings.Repeat("y\n", 101)), 0o644)
	got, st, err := before.Diff()
	if err != nil || st.Summaries != 1 || st.Binary != 0 || !strings.Contains(got, "File changed: 200 → 202 bytes") {
		t.Errorf("%v %+v:\n%s", err, st, got)
	}
}
