package jsstr

import (
	"math"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestTrim(t *testing.T) {
	cases := []struct{ in, trim, trimEnd string }{
		{"", "", ""},
		{" \t\n\v\f\r a b \u00a0", "a b", " \t\n\v\f\r a b"},
		{"\ufeff\u2028x\u3000\u200a", "x", "\ufeff\u2028x"},
		// U+200B (zero width space) and U+0085 (NEL) are not JavaScript whitespace.
		{"\u200bx\u0085", "\u200bx\u0085", "\u200bx\u0085"},
	}
	for _, c := range cases {
		got := [2]string{Trim(c.in), TrimEnd(c.in)}
		if d := cmp.Diff([2]string{c.trim, c.trimEnd}, got); d != "" {
			t.Errorf("Trim/TrimEnd(%q) (-want +got):\n%s", c.in, d)
		}
	}
}

func TestUTF16Slicing(t *testing.T) {
	const s = "aé😀b" // 1 + 1 + 2 + 1 units
	if got := Len(s); got != 5 {
		t.Errorf("Len(%q) = %d, want 5", s, got)
	}
	if d := cmp.Diff([]uint16{'a', 0xe9, 0xd83d, 0xde00, 'b'}, UTF16Units(s)); d != "" {
		t.Errorf("UTF16Units (-want +got):\n%s", d)
	}
	cases := []struct {
		n                       int
		prefix, sliceFrom, suff string
	}{
		{-1, "", s, ""},
		{0, "", s, ""},
		{1, "a", "é😀b", "b"},
		{2, "aé", "😀b", "b"}, // Suffix(2) would split the pair: dropped whole
		{3, "aé", "b", "😀b"}, // Prefix(3) would split it; SliceFrom(3) starts inside it
		{4, "aé😀", "b", "é😀b"},
		{5, s, "", s},
		{9, s, "", s},
	}
	for _, c := range cases {
		got := [3]string{Prefix(s, c.n), SliceFrom(s, c.n), Suffix(s, c.n)}
		if d := cmp.Diff([3]string{c.prefix, c.sliceFrom, c.suff}, got); d != "" {
			t.Errorf("n=%d: [Prefix SliceFrom Suffix] (-want +got):\n%s", c.n, d)
		}
	}
}

func TestDecode(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain é", "plain é"},
		{"\xef\xbb\xbfbom", "\ufeffbom"}, // the BOM is the caller's business
		{"a\xffb", "a\ufffdb"},
		{"\xe2\x82", "\ufffd"},   // a truncated sequence is one U+FFFD
		{"\xe2\x82x", "\ufffdx"}, // ... also before another character
		{"\xe2\x82\xe2\x82\xac", "\ufffd€"},
		{"\xc0\xaf", "\ufffd\ufffd"},           // overlong: no valid prefix at all
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"}, // surrogate: ED takes only 80..9F
		{"\xf0\x90\x80", "\ufffd"},
		{"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"}, // above U+10FFFF
		{"\x80\x80", "\ufffd\ufffd"},
	}
	for _, c := range cases {
		if got := Decode([]byte(c.in)); got != c.want {
			t.Errorf("Decode(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("a\xe2\x82\xed\xa0\x80\xf0\x90\x80\xf4\x90"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := Decode(b)
		if !utf8.ValidString(got) {
			t.Fatalf("Decode(%q) = %q is not valid UTF-8", b, got)
		}
		if utf8.Valid(b) && got != string(b) {
			t.Fatalf("Decode changed valid input %q to %q", b, got)
		}
	})
}

func TestAppendQuote(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", `""`},
		{"a\"\\\n\t\r\b\f", `"a\"\\\n\t\r\b\f"`},
		{"\x01\x1f\x7f", `"\u0001\u001f` + "\x7f" + `"`},
		{"<>&\u2028\u2029é😀", `"<>&` + "\u2028\u2029é😀" + `"`},
		{"a\xffb", "\"a\ufffdb\""},
	}
	for _, c := range cases {
		if got := string(AppendQuote([]byte("x"), c.in)); got != "x"+c.want {
			t.Errorf("AppendQuote(%q) = %s, want x%s", c.in, got, c.want)
		}
	}
}

func TestNumber(t *testing.T) {
	tenth := 0.1 // a variable, so that 0.1+0.2 is not folded exactly at compile time
	cases := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{42, "42"},
		{-1.5, "-1.5"},
		{tenth + 2*tenth, "0.30000000000000004"},
		{1e20, "100000000000000000000"},
		{1e21, "1e+21"},
		{1.5e300, "1.5e+300"},
		{1e-6, "0.000001"},
		{1e-7, "1e-7"},
		{-2.5e-10, "-2.5e-10"},
		{math.NaN(), "NaN"},
		{math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
	}
	for _, c := range cases {
		if got := Number(c.in); got != c.want {
			t.Errorf("Number(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
