package patch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// archive is a txtar-format file: a comment, then "-- name --" sections.
type archive struct {
	comment string
	files   []archiveFile
}

type archiveFile struct {
	name string
	data string
}

func parseArchive(t *testing.T, path string) archive {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ar archive
	cur := &ar.comment
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "-- "); ok && strings.HasSuffix(name, " --") {
			ar.files = append(ar.files, archiveFile{name: strings.TrimSuffix(name, " --")})
			cur = &ar.files[len(ar.files)-1].data
			continue
		}
		*cur += line
	}
	return ar
}

// Each testdata/scenarios/*.txtar holds a patch, the files before ("in/…"),
// every file after ("out/…") and the expected summary or error ("result").
// A comment line "partial" applies with Options.Partial.
func TestScenarios(t *testing.T) {
	paths, err := filepath.Glob("testdata/scenarios/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar := parseArchive(t, path)
			dir := t.TempDir()
			var patchText, wantResult string
			wantFiles := map[string]string{}
			for _, f := range ar.files {
				switch {
				case f.name == "patch":
					patchText = f.data
				case f.name == "result":
					wantResult = f.data
				case strings.HasPrefix(f.name, "in/"):
					p := filepath.Join(dir, strings.TrimPrefix(f.name, "in/"))
					os.MkdirAll(filepath.Dir(p), 0o755)
					if err := os.WriteFile(p, []byte(f.data), 0o644); err != nil {
						t.Fatal(err)
					}
				case strings.HasPrefix(f.name, "out/"):
					wantFiles[strings.TrimPrefix(f.name, "out/")] = f.data
				default:
					t.Fatalf("unknown section %q", f.name)
				}
			}
			opt := Options{Dir: dir, Partial: strings.HasPrefix(ar.comment, "partial\n")}
			p, err := Parse(patchText)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			res, err := Apply(p, opt)
			if d := cmp.Diff(wantResult, describe(res, err, dir)); d != "" {
				t.Errorf("result (-want +got):\n%s", d)
			}
			if d := cmp.Diff(wantFiles, readTree(t, dir)); d != "" {
				t.Errorf("files after apply (-want +got):\n%s", d)
			}
		})
	}
}

// describe renders a result as Codex lists it, or the error.
func describe(res Result, err error, dir string) string {
	var b strings.Builder
	summary := func(r Result) {
		for _, p := range r.Added {
			b.WriteString("A " + p + "\n")
		}
		for _, p := range r.Modified {
			b.WriteString("M " + p + "\n")
		}
		for _, p := range r.Deleted {
			b.WriteString("D " + p + "\n")
		}
	}
	if err == nil {
		summary(res)
		return b.String()
	}
	b.WriteString("error: " + strings.ReplaceAll(err.Error(), dir, "$DIR") + "\n")
	var ae *ApplyError
	if errors.As(err, &ae) && len(ae.Applied.Changes) > 0 {
		b.WriteString("applied: ")
		summary(ae.Applied)
	}
	return b.String()
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return nil
	})
	return out
}

func TestApplyLineEndings(t *testing.T) {
	tests := []struct {
		name   string
		before string
		patch  string
		after  string
	}{
		{"no final newline gets one", "a\nb", "@@\n-b\n+B", "a\nB\n"},
		// Codex on Unix splits at "\n" only: lines outside the chunk keep
		// their CR, the chunk's lines (context included) come from the
		// patch without one.
		{"crlf lines", "a\r\nb\r\nc\r\n", "@@\n a\n-b\n+B", "a\nB\nc\r\n"},
		{"final newline chunk", "x\ny\n", "@@\n x\n-y\n+z\n", "x\nz\n"},
		{"empty file pure addition", "", "@@\n+first", "first\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f.txt")
			os.WriteFile(p, []byte(tt.before), 0o600)
			pt, err := Parse("*** Begin Patch\n*** Update File: f.txt\n" + tt.patch + "\n*** End Patch")
			if err != nil {
				t.Fatal(err)
			}
			res, err := Apply(pt, Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(p)
			if string(got) != tt.after || string(res.Changes[0].After) != tt.after || string(res.Changes[0].Before) != tt.before {
				t.Errorf("file %q, change %+v; want %q", got, res.Changes[0], tt.after)
			}
			if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
				t.Errorf("mode changed to %v", fi.Mode().Perm())
			}
		})
	}
}

func TestApplyErrorFields(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	p, err := Parse("*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** Update File: a.txt\n@@\n-zzz\n+y\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(p, Options{Dir: dir})
	var ae *ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("err %v", err)
	}
	want := ApplyError{Kind: LinesNotFound, Hunk: 1, Path: filepath.Join(dir, "a.txt"), PatchPath: "a.txt", Lines: []string{"zzz"}}
	if d := cmp.Diff(want, *ae); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "a\n" {
		t.Errorf("first hunk applied despite the failure: %q", b)
	}
}

func TestSeekStrictnessOrder(t *testing.T) {
	lines := []string{"  foo", "foo  ", "foo"}
	tests := []struct {
		pattern []string
		start   int
		eof     bool
		want    int
	}{
		{[]string{"foo"}, 0, false, 2},               // exact wins over earlier fuzzy matches
		{[]string{"foo "}, 0, false, 1},              // trailing whitespace ignored before leading
		{[]string{" foo"}, 0, false, 0},              // then surrounding whitespace
		{[]string{"foo"}, 0, true, 2},                // end of file
		{[]string{"  foo"}, 0, true, 2},              // eof only tries the last position (fuzzy there)
		{[]string{"bar"}, 0, false, -1},              // absent
		{[]string{"a", "b", "c", "d"}, 0, false, -1}, // longer than the file
		{nil, 1, false, 1},                           // empty pattern matches where it starts
	}
	for _, tt := range tests {
		if got := seek(lines, tt.pattern, tt.start, tt.eof); got != tt.want {
			t.Errorf("seek(%q, start %d, eof %v) = %d, want %d", tt.pattern, tt.start, tt.eof, got, tt.want)
		}
	}
}

func TestResultOrder(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"d1", "d2", "m1", "m2"} {
		os.WriteFile(filepath.Join(dir, n), []byte(n+"\n"), 0o644)
	}
	p, err := Parse(strings.Join([]string{"*** Begin Patch",
		"*** Delete File: d2", "*** Update File: m2", "@@", "-m2", "+x", "*** Add File: a2", "+a",
		"*** Delete File: d1", "*** Update File: m1", "*** Move to: m1b", "@@", "-m1", "+y", "*** Add File: a1", "+a",
		"*** End Patch"}, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Apply(p, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	got := [][]string{res.Added, res.Modified, res.Deleted}
	want := [][]string{{"a2", "a1"}, {"m2", "m1b"}, {"d2", "d1"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	var files []string
	for f := range readTree(t, dir) {
		files = append(files, f)
	}
	sort.Strings(files)
	if d := cmp.Diff([]string{"a1", "a2", "m1b", "m2"}, files); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
}
