package result

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUnifiedDiff(t *testing.T) {
	cases := []struct {
		name, a, b, want string
	}{
		{"equal", "x\n", "x\n", ""},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "--- O\n+++ O'\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"added at end", "a\n", "a\nb\n", "--- O\n+++ O'\n@@ -1 +1,2 @@\n a\n+b\n"},
		{"from empty", "", "a\n", "--- O\n+++ O'\n@@ -0,0 +1 @@\n+a\n"},
		{"no trailing newline", "a", "b", "--- O\n+++ O'\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\nX\n3\n4\n5\n6\n7\nY\n9\n",
			"--- O\n+++ O'\n@@ -1,3 +1,3 @@\n 1\n-2\n+X\n 3\n@@ -7,3 +7,3 @@\n 7\n-8\n+Y\n 9\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := UnifiedDiff("O", "O'", tc.a, tc.b, 1)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// Applying the diff's + and context lines must give b back; checked on
// many generated pairs so the edit script is not only right for the table.
func TestUnifiedDiffRoundTrip(t *testing.T) {
	for i := 0; i < 200; i++ {
		a := genLines(i, 7)
		b := genLines(i*31+5, 11)
		d := UnifiedDiff("a", "b", a, b, 1000)
		var gotB, gotA strings.Builder
		for _, l := range strings.SplitAfter(d, "\n")[2:] {
			if l == "" || strings.HasPrefix(l, "@@") {
				continue
			}
			switch l[0] {
			case ' ':
				gotA.WriteString(l[1:])
				gotB.WriteString(l[1:])
			case '+':
				gotB.WriteString(l[1:])
			case '-':
				gotA.WriteString(l[1:])
			}
		}
		if a != b && (gotB.String() != b || gotA.String() != a) {
			t.Fatalf("case %d: diff does not reproduce inputs\na=%q\nb=%q\ndiff:\n%s", i, a, b, d)
		}
	}
}

func genLines(seed, n int) string {
	var sb strings.Builder
	x := uint32(seed*2654435761 + 1)
	for i := 0; i < n; i++ {
		x = x*1664525 + 1013904223
		sb.WriteString(string(rune('a' + x>>28%4)))
		sb.WriteByte('\n')
	}
	return sb.String()
}
