package codex

// The text shapes codex-rs gives tool results, reproduced byte for byte:
// Rust's string and float formatting, serde_json's string escaping, and
// the output truncation rules of each CLI era.

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

// serdeString encodes s as serde_json does: only '"', '\\' and control
// characters are escaped (\b \t \n \f \r by name, others as \u00xx with
// lowercase hex); '<', '>', '&', DEL and U+2028/2029 stay literal, which is
// where encoding/json would differ.
func serdeString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b.WriteString(s[start:i])
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			const hex = "0123456789abcdef"
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
		start = i + 1
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
	return b.String()
}

// lossyUTF8 is Rust's String::from_utf8_lossy: every maximal ill-formed
// subsequence becomes one U+FFFD. That is the same Unicode "maximal
// subpart" rule the WHATWG decoder follows, so the shared decoder serves.
func lossyUTF8(p []byte) string { return jsstr.Decode(p) }

// rustLines splits like Rust's str::lines: at "\n", dropping one "\r"
// before it, without an empty last line after a final newline.
func rustLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// lineCount is s.lines().count().
func lineCount(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// approxTokens is codex's approx_token_count: bytes / 4, rounded up.
func approxTokens(n int64) int64 { return (n + 3) / 4 }

// durationSeconds is codex's ((d.as_secs_f32() * 10.0).round() / 10.0),
// computed in float32 as Rust does.
func durationSeconds(d time.Duration) float32 {
	s := float32(d.Seconds())
	return float32(math.Round(float64(s*10))) / 10
}

// rustF32Display formats v as Rust's Display for f32 ("0", "2.2", "12").
func rustF32Display(v float32) string {
	return strconv.FormatFloat(float64(v), 'f', -1, 32)
}

// serdeF32 formats v as serde_json writes an f32 ("0.0", "2.2", "12.0").
func serdeF32(v float32) string {
	s := rustF32Display(v)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// rustIOError renders err as Rust's io::Error Display does for an OS
// error: "No such file or directory (os error 2)".
func rustIOError(err error) string {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
	case errors.Is(err, fs.ErrNotExist):
		errno = syscall.ENOENT
	case errors.Is(err, fs.ErrPermission):
		errno = syscall.EACCES
	default:
		return err.Error()
	}
	msg := errno.Error()
	if msg != "" {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	return fmt.Sprintf("%s (os error %d)", msg, int(errno))
}

// takeBytesAtCharBoundary is the longest prefix of s within maxb bytes
// that does not split a UTF-8 sequence.
func takeBytesAtCharBoundary(s string, maxb int) string {
	if len(s) <= maxb {
		return s
	}
	end := 0
	for i, r := range s {
		n := i + utf8.RuneLen(r)
		if r == utf8.RuneError {
			n = i + 1
		}
		if n > maxb {
			break
		}
		end = n
	}
	return s[:end]
}

// takeLastBytesAtCharBoundary is the longest suffix of s within maxb bytes
// that starts on a character boundary.
func takeLastBytesAtCharBoundary(s string, maxb int) string {
	if len(s) <= maxb {
		return s
	}
	start := len(s)
	for start > 0 {
		_, n := utf8.DecodeLastRuneInString(s[:start])
		if len(s)-(start-n) > maxb {
			break
		}
		start -= n
	}
	return s[start:]
}

// Constants of the 0.3x-0.4x exec output formatter (format_exec_output_str).
const (
	legacyMaxBytes  = 10 * 1024
	legacyMaxLines  = 256
	legacyHeadLines = 128
	legacyTailLines = 128
	legacyHeadBytes = 5 * 1024
)

// truncateLegacy is 0.40's head+tail truncation by lines and bytes: the
// first 128 and last 128 lines (re-joined with "\n"), at most 10 KiB in
// all, around "\n[... omitted N of M lines ...]\n\n".
func truncateLegacy(s string) string {
	total := lineCount(s)
	if len(s) <= legacyMaxBytes && total <= legacyMaxLines {
		return s
	}
	lines := rustLines(s)
	head := min(legacyHeadLines, len(lines))
	tail := min(legacyTailLines, len(lines)-head)
	omitted := len(lines) - head - tail
	headBlock := strings.Join(lines[:head], "\n")
	tailBlock := ""
	if tail > 0 {
		tailBlock = strings.Join(lines[len(lines)-tail:], "\n")
	}
	marker := fmt.Sprintf("\n[... omitted %d of %d lines ...]\n\n", omitted, total)
	headBudget := legacyHeadBytes
	if legacyMaxBytes-(headBudget+len(marker)) <= 0 {
		if len(marker) >= legacyMaxBytes {
			return takeBytesAtCharBoundary(marker, legacyMaxBytes)
		}
		headBudget = legacyMaxBytes - len(marker)
	}
	out := takeBytesAtCharBoundary(headBlock, headBudget) + marker
	return out + takeLastBytesAtCharBoundary(tailBlock, legacyMaxBytes-len(out))
}

// truncateTokens is codex's truncate_middle_with_token_budget: keep the
// first and last half of maxTokens*4 bytes (on character boundaries) around
// "…N tokens truncated…", N counting the bytes over budget.
func truncateTokens(s string, maxTokens int) string {
	if s == "" {
		return ""
	}
	maxBytes := maxTokens * 4
	if maxTokens > 0 && len(s) <= maxBytes {
		return s
	}
	if maxBytes == 0 {
		return fmt.Sprintf("…%d tokens truncated…", approxTokens(int64(len(s))))
	}
	left := maxBytes / 2
	right := maxBytes - left
	prefixEnd := 0
	suffixStart := len(s)
	tailTarget := len(s) - right
	for i, r := range s {
		end := i + utf8.RuneLen(r)
		if r == utf8.RuneError {
			end = i + 1
		}
		if end <= left {
			prefixEnd = end
			continue
		}
		if i >= tailTarget {
			suffixStart = i
			break
		}
	}
	suffixStart = max(suffixStart, prefixEnd)
	return s[:prefixEnd] + fmt.Sprintf("…%d tokens truncated…", approxTokens(int64(len(s)-maxBytes))) + s[suffixStart:]
}

// truncHeader says how an over-budget unified exec output is introduced.
type truncHeader int

const (
	// headerLines: 0.12x, "Total output lines: N\n\n" before the text.
	headerLines truncHeader = iota
	// headerWarning: 0.17x, "Warning: truncated output (original token
	// count: T)\nTotal output lines: N\n\n".
	headerWarning
)

// formatTruncated is formatted_truncate_text for a token budget: the text
// unchanged when it fits, else a header and the middle-truncated text.
func formatTruncated(s string, maxTokens int, h truncHeader, tokens int64) string {
	if len(s) <= maxTokens*4 {
		return s
	}
	head := fmt.Sprintf("Total output lines: %d\n\n", lineCount(s))
	if h == headerWarning {
		head = fmt.Sprintf("Warning: truncated output (original token count: %d)\n", tokens) + head
	}
	return head + truncateTokens(s, maxTokens)
}
