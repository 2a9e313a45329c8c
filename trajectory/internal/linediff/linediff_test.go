package linediff

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTokens(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a\n", []string{"a\n"}},
		{"a\r\nb\n\nc", []string{"a\r\n", "b\n", "\n", "c"}},
	}
	for _, c := range cases {
		if d := cmp.Diff(c.want, Tokens(c.in)); d != "" {
			t.Errorf("Tokens(%q) (-want +got):\n%s", c.in, d)
		}
	}
}

func eq(ls ...string) Part  { return Part{Count: len(ls), Lines: ls} }
func add(ls ...string) Part { return Part{Count: len(ls), Added: true, Lines: ls} }
func del(ls ...string) Part { return Part{Count: len(ls), Removed: true, Lines: ls} }

func TestLines(t *testing.T) {
	cases := []struct {
		name     string
		old, new string
		want     []Part
	}{
		{"both empty", "", "", []Part{}},
		{"same", "a\nb\n", "a\nb\n", []Part{eq("a\n", "b\n")}},
		{"from empty", "", "a\nb", []Part{add("a\n", "b")}},
		{"to empty", "a\n", "", []Part{del("a\n")}},
		// jsdiff puts a removal before the addition that replaces it.
		{"replace", "a\n", "b\n", []Part{del("a\n"), add("b\n")}},
		{"middle", "a\nb\nc\n", "a\nx\ny\nc\n", []Part{eq("a\n"), del("b\n"), add("x\n", "y\n"), eq("c\n")}},
		// A last line without its newline is a different line.
		{"newline at end", "a\nb", "a\nb\n", []Part{eq("a\n"), del("b"), add("b\n")}},
		{"crlf differs", "a\r\n", "a\n", []Part{del("a\r\n"), add("a\n")}},
		// Of the minimal diffs of a repeated line, jsdiff keeps the
		// earliest copy and removes the later one.
		{"repeat", "x\nx\n", "x\n", []Part{eq("x\n"), del("x\n")}},
		{"two hunks", "1\n2\n3\n4\n5\n", "1\nB\n3\n4\nE\n",
			[]Part{eq("1\n"), del("2\n"), add("B\n"), eq("3\n", "4\n"), del("5\n"), add("E\n")}},
	}
	for _, c := range cases {
		if d := cmp.Diff(c.want, Lines(c.old, c.new)); d != "" {
			t.Errorf("%s: Lines(%q, %q) (-want +got):\n%s", c.name, c.old, c.new, d)
		}
	}
}

// lcs is the length of the longest common subsequence of two token lists.
func lcs(a, b []string) int {
	row := make([]int, len(b)+1)
	for i := range a {
		prev := 0
		for j := range b {
			cur := row[j+1]
			if a[i] == b[j] {
				row[j+1] = prev + 1
			} else {
				row[j+1] = max(row[j+1], row[j])
			}
			prev = cur
		}
	}
	return row[len(b)]
}

func FuzzLines(f *testing.F) {
	f.Add([]byte{0, 1, 2, 0}, []byte{1, 0, 2})
	f.Fuzz(func(t *testing.T, x, y []byte) {
		// Few distinct lines, so that the texts share many of them.
		text := func(b []byte) string {
			var sb strings.Builder
			for _, c := range b {
				sb.WriteString([]string{"a\n", "b\n", "c", "\n"}[c%4])
			}
			return sb.String()
		}
		oldText, newText := text(x), text(y)
		var gotOld, gotNew strings.Builder
		edits := 0
		for _, p := range Lines(oldText, newText) {
			if p.Count != len(p.Lines) || p.Count == 0 || (p.Added && p.Removed) {
				t.Fatalf("malformed part %+v", p)
			}
			joined := strings.Join(p.Lines, "")
			if !p.Added {
				gotOld.WriteString(joined)
			}
			if !p.Removed {
				gotNew.WriteString(joined)
			}
			if p.Added || p.Removed {
				edits += p.Count
			}
		}
		if gotOld.String() != oldText || gotNew.String() != newText {
			t.Fatalf("parts rebuild %q -> %q, want %q -> %q", gotOld.String(), gotNew.String(), oldText, newText)
		}
		ot, nt := Tokens(oldText), Tokens(newText)
		if want := len(ot) + len(nt) - 2*lcs(ot, nt); edits != want {
			t.Fatalf("%d lines changed, a shortest diff changes %d", edits, want)
		}
		a, d := Changes(oldText, newText)
		if a+d != edits {
			t.Fatalf("Changes = %d+%d, parts change %d", a, d, edits)
		}
	})
}
