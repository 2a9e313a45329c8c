package replay

import "testing"

// Issue 24 #15: a CLI's coloured error reaches the failure message as text.
func TestPlainText(t *testing.T) {
	for in, want := range map[string]string{
		"\x1b[91m\x1b[1mError: \x1b[0mno such table: session\n": "Error: no such table: session\n",
		"\x1b]0;title\x07ok\x1b]8;;http://x\x1b\\link":          "oklink",
		"a\rb\x00c\x7fd\tend":                                   "abcd\tend",
		"\x1bMup \x1b[2Kline":                                   "up line",
	} {
		if got := plainText(in); got != want {
			t.Errorf("plainText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := clipOut([]byte("\x1b[31mboom\x1b[0m\n")); got != "boom" {
		t.Errorf("clipOut = %q", got)
	}
}
