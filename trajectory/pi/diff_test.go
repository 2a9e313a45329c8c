package pi

import (
	"strings"
	"testing"
)

// diffCases are random edits whose expected diffs came from pi 0.73.1's
// own generateDiffString (node); ties between equally short diffs must
// be broken the same way.
var diffCases = []struct {
	old, new, diff string
	first          int
}{
	{"b\nd\na\na\ne\na\nc\ne\na\ne", "b\nd\na\na\na\ne\na\ne\na\ne\n", "  1 b\n  2 d\n  3 a\n  4 a\n+ 5 a\n  5 e\n  6 a\n- 7 c\n  8 e\n  9 a\n-10 e\n+10 e", 5},
	{"b\ne\na", "e\na\na\nc", "-1 b\n 2 e\n-3 a\n+2 a\n+3 a\n+4 c", 1},
	{"a\ne\na\ne\na\ne\nb\nd\ne\nd\nc", "a\ne\ne\na\na\ne\nb\nc\nd\nd\ne\nd\nc", "  1 a\n  2 e\n- 3 a\n  4 e\n  5 a\n+ 5 a\n  6 e\n  7 b\n+ 8 c\n  8 d\n+10 d\n  9 e\n 10 d\n 11 c", 3},
	{"e\na\na\ne\nd\nb\nc\nb\nd", "e\na\ne\nd\nb\nc\nc\na\nb\nd\nd", "  1 e\n  2 a\n- 3 a\n  4 e\n  5 d\n  6 b\n  7 c\n+ 7 c\n+ 8 a\n  8 b\n+10 d\n  9 d", 3},
	{"a\na\nc\ne\nd\nc\nd\nc\na\nd\nc\nb\ne\na\nd\n", "a\na\nc\ne\nc\nd\nc\na\nd\nc\nb\ne\na\nd\n", "  1 a\n  2 a\n  3 c\n  4 e\n- 5 d\n  6 c\n  7 d\n  8 c\n  9 a\n    ...", 5},
	{"d\na\nb\nd\nd\ne\nc\nb\nd\ne\nc\nd\n", "d\na\nd\nd\ne\nb\nc\nb\nd\ne\nd\n", "  1 d\n  2 a\n- 3 b\n  4 d\n  5 d\n  6 e\n+ 6 b\n  7 c\n  8 b\n  9 d\n 10 e\n-11 c\n 12 d", 3},
	{"c\nc\na\nb\nd\n", "d\nc\na", "-1 c\n-2 c\n-3 a\n-4 b\n 5 d\n+2 c\n+3 a", 1},
	{"a\ne\nb\n", "b\nf\nb\na\n", "-1 a\n-2 e\n 3 b\n+2 f\n+3 b\n+4 a", 1},
	{"d\nd\nc\na\nb\na\nc\nc\nd\nb\ne\na\nb\ne", "d\nd\nc\na\nz\na\nc\nc\nb\ne\na\nx\ne", "  1 d\n  2 d\n  3 c\n  4 a\n- 5 b\n+ 5 z\n  6 a\n  7 c\n  8 c\n- 9 d\n 10 b\n 11 e\n 12 a\n-13 b\n+12 x\n 14 e", 5},
	{"c\nb\ne\ne\ne\n", "c\nb\ne\ne\nx\ny", " 1 c\n 2 b\n 3 e\n 4 e\n-5 e\n+5 x\n+6 y", 5},
	{"l0\nl1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nl15\nl16\nl17\nl18\nl19\nl20\nl21\nl22\n", "l0\nCH1\nl2\nl3\nl4\nl5\nl6\nCH7\nl8\nl9\nCH10\nl11\nl12\nl13\nl14\nl15\nl16\nl17\nl18\nl19\nl20\nCH21\nl22\n", "  1 l0\n- 2 l1\n+ 2 CH1\n  3 l2\n  4 l3\n  5 l4\n  6 l5\n  7 l6\n- 8 l7\n+ 8 CH7\n  9 l8\n 10 l9\n-11 l10\n+11 CH10\n 12 l11\n 13 l12\n 14 l13\n 15 l14\n    ...\n 18 l17\n 19 l18\n 20 l19\n 21 l20\n-22 l21\n+22 CH21\n 23 l22", 2},
	{"l0\nl1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nl15\nl16\nl17\nl18\nl19\n", "l0\nl1\nl2\nl3\nl4\nl5\nl6\nl7\nCH8\nl9\nl10\nl11\nCH12\nl13\nCH14\nCH15\nl16\nl17\nl18\nl19\n", "    ...\n  5 l4\n  6 l5\n  7 l6\n  8 l7\n- 9 l8\n+ 9 CH8\n 10 l9\n 11 l10\n 12 l11\n-13 l12\n+13 CH12\n 14 l13\n-15 l14\n-16 l15\n+15 CH14\n+16 CH15\n 17 l16\n 18 l17\n 19 l18\n 20 l19", 9},
	{"l0\nl1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nl15\nl16\nl17\nl18\nl19\nl20\nl21\nl22\nl23\nl24\nl25\nl26\nl27\nl28\nl29\nl30\nl31\nl32\nl33\nl34\nl35\nl36\nl37\n", "l0\nCH1\nl2\nl3\nCH4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nl15\nl16\nl17\nl18\nl19\nCH20\nl21\nl22\nl23\nl24\nl25\nl26\nl27\nl28\nl29\nl30\nl31\nl32\nl33\nl34\nl35\nl36\nl37\n", "  1 l0\n- 2 l1\n+ 2 CH1\n  3 l2\n  4 l3\n- 5 l4\n+ 5 CH4\n  6 l5\n  7 l6\n  8 l7\n  9 l8\n    ...\n 17 l16\n 18 l17\n 19 l18\n 20 l19\n-21 l20\n+21 CH20\n 22 l21\n 23 l22\n 24 l23\n 25 l24\n    ...", 2},
}

func TestGenerateDiff(t *testing.T) {
	for i, c := range diffCases {
		d, f := generateDiff(c.old, c.new)
		if d != c.diff || f != c.first {
			t.Errorf("case %d %q -> %q:\n got %q (line %d)\nwant %q (line %d)", i, c.old, c.new, d, f, c.diff, c.first)
		}
	}
}

func TestJSText(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{
		{"ok", "ok"},
		{"a\xe2\x82b", "a\ufffdb"},             // one U+FFFD for a cut sequence
		{"\xff\xfe", "\ufffd\ufffd"},           // one per invalid byte
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"}, // surrogates are invalid
		{"\xf0\x9f\x98", "\ufffd"},             // truncated at the end
		{"\xef\xbb\xbfx", "\ufeffx"},           // Buffer.toString keeps a BOM
	} {
		if got := decodeUTF8([]byte(c.in), false); got != c.want {
			t.Errorf("decodeUTF8(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := decodeUTF8([]byte("\xef\xbb\xbfx"), true); got != "x" {
		t.Errorf("TextDecoder strips the BOM: %q", got)
	}
	if got := string(appendJSString(nil, "a\"\\\n\t\x01\x7f<>&\u2028é😀")); got != `"a\"\\\n\t\u0001`+"\x7f<>&\u2028é😀"+`"` {
		t.Errorf("appendJSString = %s", got)
	}
	for n, want := range map[int]string{0: "0B", 1023: "1023B", 1024: "1.0KB", 1280: "1.3KB", 51200: "50.0KB", 60000: "58.6KB", 1 << 20: "1.0MB", 1572864: "1.5MB"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %s, want %s", n, got, want)
		}
	}
	for v, want := range map[float64]string{1: "1", 0.5: "0.5", 120: "120", 1e21: "1e+21", 1.5e-7: "1.5e-7", 30.25: "30.25"} {
		if got := jsNumber(v); got != want {
			t.Errorf("jsNumber(%v) = %s, want %s", v, got, want)
		}
	}
	if jsLen("é😀") != 3 {
		t.Errorf("jsLen counts UTF-16 units")
	}
}

// TestLocaleCompare checks the order node's localeCompare gives (ICU 78).
func TestLocaleCompare(t *testing.T) {
	order := " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
	for i := 1; i < len(order); i++ {
		if localeCompare(order[i-1:i], order[i:i+1]) >= 0 {
			t.Errorf("%q should sort before %q", order[i-1], order[i])
		}
	}
	names := strings.Split("a|ä|a b|a_b|a-b|a.b|a1|ab|e|é|f|z", "|")
	for i := 1; i < len(names); i++ {
		if localeCompare(names[i-1], names[i]) >= 0 {
			t.Errorf("%q should sort before %q", names[i-1], names[i])
		}
	}
}
