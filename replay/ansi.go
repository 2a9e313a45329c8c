package replay

import (
	"regexp"
	"strings"
	"sync"
)

// ansiEscape matches terminal escape sequences: CSI (colours, cursor), OSC
// (titles, links; ended by BEL or ST) and two-byte escapes.
var ansiEscape = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("\x1b(?:\\[[0-?]*[ -/]*[@-~]|\\][^\x07\x1b]*(?:\x07|\x1b\\\\)|[@-Z\\\\-_])")
})

// plainText makes a CLI's output fit a failure message: escape sequences
// removed and other control characters (but newlines and tabs) dropped, so
// a result line never carries a CLI's colours or a terminal trick
// (issue 24 #15: OpenCode's coloured error in the failure message).
func plainText(s string) string {
	s = ansiEscape().ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || r >= 0x20 && r != 0x7f && (r < 0x80 || r >= 0xa0) {
			return r
		}
		return -1
	}, s)
}
