package patch

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	text := `*** Begin Patch
*** Add File: path/add.py
+abc
+def
*** Delete File: path/delete.py
*** Update File: path/update.py
*** Move to: path/update2.py
@@ def f():
-    pass
+    return 123
@@
 ctx

+added after blank context
*** End of File
*** Update File: no_header.py
 import foo
+bar
*** End Patch`
	want := &Patch{Hunks: []Hunk{
		{Op: Add, Path: "path/add.py", Contents: "abc\ndef\n", Line: 2},
		{Op: Delete, Path: "path/delete.py", Line: 5},
		{Op: Update, Path: "path/update.py", MoveTo: "path/update2.py", Line: 6, Chunks: []Chunk{
			{Context: "def f():", HasContext: true, Old: []string{"    pass"}, New: []string{"    return 123"}},
			{Old: []string{"ctx", ""}, New: []string{"ctx", "", "added after blank context"}, EOF: true},
		}},
		{Op: Update, Path: "no_header.py", Line: 16, Chunks: []Chunk{
			{Old: []string{"import foo"}, New: []string{"import foo", "bar"}},
		}},
	}}
	got, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// Messages and line numbers are Codex's, so the formatter can reproduce
// "Invalid patch hunk on line N: …" exactly.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		text string
		want ParseError
	}{
		{"empty", "", ParseError{Msg: "The last line of the patch must be '*** End Patch'"}},
		{"no begin", "bad", ParseError{Msg: "The first line of the patch must be '*** Begin Patch'"}},
		{"no end", "*** Begin Patch\nbad", ParseError{Msg: "The last line of the patch must be '*** End Patch'"}},
		{"only begin", "*** Begin Patch", ParseError{Msg: "The last line of the patch must be '*** End Patch'"}},
		{"bad hunk header", "*** Begin Patch\n*** Add File: a\n+x\n*** Frobnicate File: b\n*** End Patch",
			ParseError{Line: 4, Msg: "'*** Frobnicate File: b' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"}},
		{"empty update", "*** Begin Patch\n*** Update File: test.py\n*** End Patch",
			ParseError{Line: 2, Msg: "Update file hunk for path 'test.py' is empty"}},
		{"second chunk without @@", "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n@@\n-z\nbad line\n*** End Patch",
			ParseError{Line: 8, Msg: "Expected update hunk to start with a @@ context marker, got: 'bad line'"}},
		{"@@ with nothing after", "*** Begin Patch\n*** Update File: a\n@@\n*** End Patch",
			ParseError{Line: 4, Msg: "Update hunk does not contain any lines"}},
		{"unexpected first line", "*** Begin Patch\n*** Update File: a\n@@\n?x\n*** End Patch",
			ParseError{Line: 4, Msg: "Unexpected line found in update hunk: '?x'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"}},
		{"end of file first", "*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch",
			ParseError{Line: 4, Msg: "Update hunk does not contain any lines"}},
		{"heredoc with bad inner", "<<'EOF'\n*** Begin Patch\n*** Nope\n*** End Patch\nEOF",
			ParseError{Line: 2, Msg: "'*** Nope' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.text)
			pe, ok := err.(*ParseError)
			if !ok {
				t.Fatalf("err = %v, want *ParseError", err)
			}
			if d := cmp.Diff(tt.want, *pe); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	if got := (&ParseError{Line: 4, Msg: "m"}).Error(); got != "invalid hunk at line 4, m" {
		t.Errorf("Error() = %q", got)
	}
}

func TestFromArgv(t *testing.T) {
	body := "*** Begin Patch\n*** Add File: f\n+hi\n*** End Patch\n"
	tests := []struct {
		name    string
		argv    []string
		text    string
		workdir string
		ok      bool
	}{
		{"direct", []string{"apply_patch", body}, body, "", true},
		{"applypatch alias", []string{"applypatch", body}, body, "", true},
		{"bash heredoc", []string{"bash", "-lc", "apply_patch <<'PATCH'\n" + body + "PATCH\n"}, body, "", true},
		{"unquoted delimiter", []string{"/bin/zsh", "-c", "apply_patch <<EOF\n" + body + "EOF"}, body, "", true},
		{"cd prefix", []string{"bash", "-lc", "cd 'sub dir' && apply_patch <<\"EOF\"\n" + body + "EOF\n"}, body, "sub dir", true},
		{"trailing command", []string{"bash", "-lc", "apply_patch <<'EOF'\n" + body + "EOF\necho done"}, "", "", false},
		{"leading command", []string{"bash", "-lc", "echo hi; apply_patch <<'EOF'\n" + body + "EOF"}, "", "", false},
		{"not apply_patch", []string{"bash", "-lc", "cat <<'EOF'\n" + body + "EOF"}, "", "", false},
		{"unterminated", []string{"bash", "-lc", "apply_patch <<'EOF'\n" + body}, "", "", false},
		{"python", []string{"python", "-c", "apply_patch <<'EOF'\n" + body + "EOF"}, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, workdir, ok := FromArgv(tt.argv)
			if text != tt.text || workdir != tt.workdir || ok != tt.ok {
				t.Errorf("got (%q, %q, %v), want (%q, %q, %v)", text, workdir, ok, tt.text, tt.workdir, tt.ok)
			}
		})
	}
}

// FuzzParseAndUpdate checks that no input makes Parse or the in-memory
// update panic, that every parse failure is a *ParseError, and that an
// update never loses the final newline of a non-empty result (Codex joins
// the lines with a final empty one; an all-empty result stays empty).
func FuzzParseAndUpdate(f *testing.F) {
	f.Add("@@ def f():\n-    pass\n+    return 1\n", "def f():\n    pass\n")
	f.Add("@@\n-a\n+b\n*** End of File\n", "a\nb\na")
	f.Add(" x\n\n+y\n@@ z\n-q\n", "x\n\nz\nq\n")
	f.Add("+only\n", "")
	f.Fuzz(func(t *testing.T, body, content string) {
		p, err := Parse("*** Begin Patch\n*** Update File: f\n" + body + "\n*** End Patch")
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		for _, h := range p.Hunks {
			if h.Op == Update {
				if out, aerr := updated(content, h.Chunks); aerr == nil && out != "" && !strings.HasSuffix(out, "\n") {
					t.Fatalf("updated content %q lacks the final newline", out)
				}
			}
		}
	})
}
