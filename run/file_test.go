package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadFileAndLines(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "one\ntwo\r\nthree\n", "sub/x": ""})
	f, err := ReadFile(filepath.Join(dir, "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(f.Content) != "one\ntwo\r\nthree\n" || f.Size != 15 || f.ModTime.IsZero() {
		t.Errorf("ReadFile = %+v", f)
	}
	lines := SplitLines(f.Content)
	if d := cmp.Diff([]string{"one", "two\r", "three", ""}, lines); d != "" {
		t.Errorf("SplitLines (-want +got):\n%s", d)
	}
	windows := []struct {
		offset, limit int
		first         int
		want          []string
	}{
		{0, 0, 1, []string{"one", "two\r", "three", ""}},
		{2, 1, 2, []string{"two\r"}},
		{3, 10, 3, []string{"three", ""}},
		{9, 1, 9, nil},
	}
	for _, w := range windows {
		first, got := Window(lines, w.offset, w.limit)
		if first != w.first || !cmp.Equal(w.want, got) {
			t.Errorf("Window(%d,%d) = %d %q, want %d %q", w.offset, w.limit, first, got, w.first, w.want)
		}
		lw, err := ReadLines(f.Path, w.offset, w.limit)
		if err != nil {
			t.Fatal(err)
		}
		if lw.First != w.first || !cmp.Equal(w.want, lw.Lines) || lw.TotalLines != 4 {
			t.Errorf("ReadLines(%d,%d) = %d %q total %d", w.offset, w.limit, lw.First, lw.Lines, lw.TotalLines)
		}
	}

	errs := []struct {
		path string
		kind Kind
	}{
		{filepath.Join(dir, "missing"), NotFound},
		{filepath.Join(dir, "sub"), IsDir},
		{"rel/path", NotAbsolute},
		{"/dev/null", NotRegular},
		{filepath.Join(dir, "a.txt", "x"), NotDir},
	}
	for _, e := range errs {
		if _, err := ReadFile(e.path); KindOf(err) != e.kind {
			t.Errorf("ReadFile(%s): %v, want kind %v", e.path, err, e.kind)
		}
	}
}

func TestReadLinesLongLines(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 200<<10) // longer than the reader's buffer
	p := filepath.Join(dir, "long")
	os.WriteFile(p, []byte("a\n"+long+"\nb"), 0o644)
	lw, err := ReadLines(p, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(lw.Lines) != 2 || lw.Lines[0] != long || lw.Lines[1] != "b" || lw.TotalLines != 3 {
		t.Errorf("got %d lines, total %d", len(lw.Lines), lw.TotalLines)
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "new", "deep", "f.txt")
	res, err := WriteFile(p, []byte("v1"))
	if err != nil || !res.Created || res.Old != nil {
		t.Fatalf("create: %+v %v", res, err)
	}
	os.Chmod(p, 0o755)
	res, err = WriteFile(p, []byte("v2"))
	if err != nil || res.Created || string(res.Old) != "v1" || res.Mode.Perm() != 0o755 {
		t.Fatalf("overwrite: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "v2" {
		t.Errorf("content %q", b)
	}
	if _, err := WriteFile(dir, nil); KindOf(err) != IsDir {
		t.Errorf("write to dir: %v", err)
	}
	if _, err := WriteFile("/dev/null", nil); KindOf(err) != NotRegular {
		t.Errorf("write to a device: %v", err)
	}
	if _, err := WriteFile("x", nil); KindOf(err) != NotAbsolute {
		t.Errorf("relative: %v", err)
	}
}

func TestEdit(t *testing.T) {
	const base = "alpha beta\nbeta gamma\ndelta\n"
	tests := []struct {
		name    string
		initial *string // nil: file absent
		edit    EditSpec
		want    string
		counts  []int
		kind    Kind
		count   int
	}{
		{name: "unique", initial: ptr(base), edit: EditSpec{Old: "delta", New: "DELTA"}, want: "alpha beta\nbeta gamma\nDELTA\n", counts: []int{1}},
		{name: "not unique", initial: ptr(base), edit: EditSpec{Old: "beta", New: "B"}, kind: NotUnique, count: 2},
		{name: "replace all", initial: ptr(base), edit: EditSpec{Old: "beta", New: "B", ReplaceAll: true}, want: "alpha B\nB gamma\ndelta\n", counts: []int{2}},
		{name: "no match", initial: ptr(base), edit: EditSpec{Old: "omega", New: "x"}, kind: NoMatch},
		{name: "no change", initial: ptr(base), edit: EditSpec{Old: "delta", New: "delta"}, kind: NoChange},
		{name: "missing file", edit: EditSpec{Old: "a", New: "b"}, kind: NotFound},
		{name: "create with empty old", edit: EditSpec{Old: "", New: "hello\n"}, want: "hello\n", counts: []int{1}},
		{name: "fill empty file", initial: ptr(""), edit: EditSpec{Old: "", New: "x"}, want: "x", counts: []int{1}},
		{name: "empty old on content", initial: ptr(base), edit: EditSpec{Old: "", New: "x"}, kind: NotEmpty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "sub", "f.txt")
			if tt.initial != nil {
				writeTree(t, filepath.Dir(p), map[string]string{"f.txt": *tt.initial})
			}
			res, err := Edit(p, tt.edit)
			if tt.kind != KindOther {
				var e *Error
				if KindOf(err) != tt.kind {
					t.Fatalf("err %v, want kind %v", err, tt.kind)
				}
				if e, _ = err.(*Error); e.Count != tt.count {
					t.Errorf("Count = %d, want %d", e.Count, tt.count)
				}
				if tt.initial != nil {
					if b, _ := os.ReadFile(p); string(b) != *tt.initial {
						t.Errorf("failed edit changed the file to %q", b)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(p)
			if string(b) != tt.want || string(res.After) != tt.want || !cmp.Equal(tt.counts, res.Counts) {
				t.Errorf("file %q After %q counts %v; want %q %v", b, res.After, res.Counts, tt.want, tt.counts)
			}
			if res.Created != (tt.initial == nil) {
				t.Errorf("Created = %v", res.Created)
			}
			for _, s := range res.Spans {
				if got := string(res.After[s.Start:s.End]); got != tt.edit.New {
					t.Errorf("span %v holds %q, want %q", s, got, tt.edit.New)
				}
			}
		})
	}
}

func TestEditSpanLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("a\nb\nc\nd\n"), 0o644)
	res, err := Edit(p, EditSpec{Old: "c", New: "C1\nC2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := LineOf(res.After, res.Spans[0].Start); got != 3 {
		t.Errorf("LineOf = %d, want 3", got)
	}
}

func TestMultiEdit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.go")
	os.WriteFile(p, []byte("func a() {}\nfunc b() {}\n"), 0o644)
	res, err := MultiEdit(p, []EditSpec{
		{Old: "a()", New: "alpha()"},
		{Old: "alpha() {}", New: "alpha() { b() }"}, // sees the first edit's result
		{Old: "func", New: "fn", ReplaceAll: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "fn alpha() { b() }\nfn b() {}\n"; string(res.After) != want || !cmp.Equal([]int{1, 1, 2}, res.Counts) {
		t.Errorf("After %q Counts %v", res.After, res.Counts)
	}

	// All or nothing: the failing third edit leaves the file untouched.
	before, _ := os.ReadFile(p)
	_, err = MultiEdit(p, []EditSpec{{Old: "fn", New: "func", ReplaceAll: true}, {Old: "b()", New: "c()", ReplaceAll: true}, {Old: "zzz", New: "y"}})
	var e *Error
	if KindOf(err) != NoMatch {
		t.Fatalf("err %v, want NoMatch", err)
	}
	if e = err.(*Error); e.Index != 2 || !strings.Contains(e.Error(), "edit 3") {
		t.Errorf("Index %d, message %q", e.Index, e.Error())
	}
	if after, _ := os.ReadFile(p); string(after) != string(before) {
		t.Errorf("file changed by a failed MultiEdit: %q", after)
	}

	// Creating through the first edit, then editing the new text.
	q := filepath.Join(t.TempDir(), "n.txt")
	res, err = MultiEdit(q, []EditSpec{{Old: "", New: "x = 1\n"}, {Old: "1", New: "2"}})
	if err != nil || !res.Created || string(res.After) != "x = 2\n" {
		t.Errorf("create+edit: %+v %v", res, err)
	}
}

func ptr(s string) *string { return &s }

// Hostile paths: a FIFO without a writer, /dev/zero and a huge sparse file
// end at once with a clear error instead of hanging or allocating.
func TestReadHostileFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse")
	if err := os.WriteFile(sparse, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 20<<30); err != nil {
		t.Fatal(err)
	}
	oneLine := filepath.Join(dir, "one-line")
	if err := os.WriteFile(oneLine, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(oneLine, int64(MaxLineBytes)+1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		read func() error
		kind Kind
	}{
		{"fifo", func() error { _, err := ReadFile(fifo); return err }, NotRegular},
		{"fifo lines", func() error { _, err := ReadLines(fifo, 1, 5); return err }, NotRegular},
		{"fifo write", func() error { _, err := WriteFile(fifo, []byte("x")); return err }, NotRegular},
		{"dev zero", func() error { _, err := ReadFile("/dev/zero"); return err }, NotRegular},
		{"sparse 20 GB", func() error { _, err := ReadFile(sparse); return err }, TooLarge},
		{"one huge line, limit 5", func() error { _, err := ReadLines(oneLine, 1, 5); return err }, TooLarge},
	} {
		done := make(chan error, 1)
		go func() { done <- tc.read() }()
		select {
		case err := <-done:
			if KindOf(err) != tc.kind {
				t.Errorf("%s: %v, want kind %v", tc.name, err, tc.kind)
			}
		case <-time.After(time.Minute):
			// A hang (a FIFO opened for reading) never returns; a minute
			// leaves room for scanning 64 MiB under -race on a loaded machine.
			t.Fatalf("%s: still reading after a minute", tc.name)
		}
	}
}

// CopyRegularFile copies a regular file's bytes into a new 0600 file and
// refuses what a user-named database must not be: a symlink (not followed),
// a FIFO (no hang waiting for a writer), a directory, an existing target.
func TestCopyRegularFile(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("rows\x00bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst")
	if err := CopyRegularFile(src, dst); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "rows\x00bytes" {
		t.Errorf("copied %q", b)
	}
	if st, _ := os.Stat(dst); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	link := filepath.Join(dir, "link")
	os.Symlink(src, link)
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ src, dst string }{
		"symlink":         {link, filepath.Join(dir, "d1")},
		"fifo":            {fifo, filepath.Join(dir, "d2")},
		"directory":       {dir, filepath.Join(dir, "d3")},
		"existing target": {src, dst},
	} {
		done := make(chan error, 1)
		go func() { done <- CopyRegularFile(tc.src, tc.dst) }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: copied", name)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s: still copying after a minute", name)
		}
	}
	if b, _ := os.ReadFile(dst); string(b) != "rows\x00bytes" {
		t.Errorf("existing target overwritten: %q", b)
	}
}
