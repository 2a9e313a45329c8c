package linediff

import "testing"

// TestFormatPatch: hunks and their printing as the "diff" package's
// createTwoFilesPatch gives them (cases checked against the package through
// the agents that use it: Pi's edit details, OpenCode's metadata).
func TestFormatPatch(t *testing.T) {
	long := ""
	for i := 1; i <= 20; i++ {
		long += "l" + string(rune('a'+i)) + "\n"
	}
	for _, tc := range []struct {
		name, old, new string
		index          bool
		want           string
	}{
		{"one line", "hello\nworld\n", "hello\nthere\n", false,
			"--- f\n+++ f\n@@ -1,2 +1,2 @@\n hello\n-world\n+there\n"},
		{"no final newline", "a\nb", "a\nc", false,
			"--- f\n+++ f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"into an empty file", "", "x\n", true,
			"Index: f\n===================================================================\n--- f\n+++ f\n@@ -0,0 +1,1 @@\n+x\n"},
		{"two hunks", long, "lb\nX\n" + long[len("lb\nlc\n"):len(long)-len("lu\n")] + "Y\n", false,
			"--- f\n+++ f\n@@ -1,6 +1,6 @@\n lb\n-lc\n+X\n ld\n le\n lf\n lg\n@@ -16,5 +16,5 @@\n lq\n lr\n ls\n lt\n-lu\n+Y\n"},
	} {
		if got := FormatPatch("f", Hunks(tc.old, tc.new, 4), tc.index); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
