package launch

import "testing"

// Issue 24 #15: a CLI's coloured error reaches the failure message as text.
func TestPlainText(t *testing.T) {
	for in, want := range map[string]string{
		"\x1b[91m\x1b[1mError: \x1b[0mno such table: session\n": "Error: no such table: session\n",
		"\x1b]0;title\x07ok\x1b]8;;http://x\x1b\\link":          "oklink",
		"a\rb\x00c\x7fd\tend":                                   "abcd\tend",
		"\x1bMup \x1b[2Kline":                                   "up line",
	} {
		if got := PlainText(in); got != want {
			t.Errorf("PlainText(%q) = %q, want %q", in, got, want)
		}
	}
}
