package launch

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
)

// Helpers for launchers that run their CLI for staging or collecting (an
// import, an export) besides the engine's own launch: its output bounded,
// fit for a failure message, and a key for what is cached per binary.

// CappedBuffer keeps the first Max bytes written and discards the rest
// (a child's output read whole: a flood must not fill memory).
type CappedBuffer struct {
	bytes.Buffer
	Max int
}

func (b *CappedBuffer) Write(p []byte) (int, error) {
	if room := b.Max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// WriteString is Write: bytes.Buffer's own would bypass the cap.
func (b *CappedBuffer) WriteString(s string) (int, error) {
	if room := b.Max - b.Len(); room > 0 {
		b.Buffer.WriteString(s[:min(len(s), room)])
	}
	return len(s), nil
}

// ReadFrom keeps the cap too: exec copies a child's output with io.Copy,
// which prefers the writer's ReadFrom, and bytes.Buffer's reads all of it
// (issue 24 #6: 200 MB of --version output was held whole).
func (b *CappedBuffer) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(writerOnly{b}, r)
}

// writerOnly hides ReadFrom so io.Copy uses Write.
type writerOnly struct{ io.Writer }

// ansiEscape matches terminal escape sequences: CSI (colours, cursor), OSC
// (titles, links; ended by BEL or ST) and two-byte escapes.
var ansiEscape = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("\x1b(?:\\[[0-?]*[ -/]*[@-~]|\\][^\x07\x1b]*(?:\x07|\x1b\\\\)|[@-Z\\\\-_])")
})

// PlainText makes a CLI's output fit a failure message: escape sequences
// removed and other control characters (but newlines and tabs) dropped, so
// a result line never carries a CLI's colours or a terminal trick
// (issue 24 #15: OpenCode's coloured error in the failure message).
func PlainText(s string) string {
	s = ansiEscape().ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || r >= 0x20 && r != 0x7f && (r < 0x80 || r >= 0xa0) {
			return r
		}
		return -1
	}, s)
}

// BinaryKey identifies the executable entry resolves to (its resolved
// path, device, inode, size, modification and change times), "" when it
// cannot be identified: a CLI replaced or upgraded in place gets another
// key, so what is cached under it (its version, a template database made
// by it) is never stale.
func BinaryKey(entry string) string {
	real, err := filepath.EvalSymlinks(entry)
	if err != nil {
		return ""
	}
	var st syscall.Stat_t
	if err := syscall.Stat(real, &st); err != nil {
		return ""
	}
	b, _ := json.Marshal([]any{real, st.Dev, st.Ino, st.Size, st.Mtim.Nano(), st.Ctim.Nano()})
	return string(b)
}
