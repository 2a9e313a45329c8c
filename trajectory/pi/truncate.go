package pi

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

// pi's output limits (truncate.ts): 2000 lines or 50 KB, whichever comes
// first; grep lines are cut at 500 characters.
const (
	defaultMaxLines   = 2000
	defaultMaxBytes   = 50 * 1024
	grepMaxLineLength = 500
	maxSafeInteger    = 9007199254740991 // Number.MAX_SAFE_INTEGER: "no line limit"
)

// truncation is pi's TruncationResult; it is written into details in this
// key order.
type truncation struct {
	Content               string
	Truncated             bool
	TruncatedBy           string // "lines", "bytes" or "" (null)
	TotalLines            int
	TotalBytes            int
	OutputLines           int
	OutputBytes           int
	LastLinePartial       bool
	FirstLineExceedsLimit bool
	MaxLines              int
	MaxBytes              int
}

func (t *truncation) appendJSON(b []byte) []byte {
	var o jsObject
	o.str("content", t.Content)
	o.boolean("truncated", t.Truncated)
	if t.TruncatedBy == "" {
		o.raw("truncatedBy", "null")
	} else {
		o.str("truncatedBy", t.TruncatedBy)
	}
	o.num("totalLines", t.TotalLines)
	o.num("totalBytes", t.TotalBytes)
	o.num("outputLines", t.OutputLines)
	o.num("outputBytes", t.OutputBytes)
	o.boolean("lastLinePartial", t.LastLinePartial)
	o.boolean("firstLineExceedsLimit", t.FirstLineExceedsLimit)
	o.num("maxLines", t.MaxLines)
	o.num("maxBytes", t.MaxBytes)
	return append(b, o.bytes()...)
}

// countedLines splits content into the lines pi's truncation counts: since
// 0.75.5 a final newline ends the last line instead of starting an empty one
// (and "" has none); before, every "\n" split (legacy).
func countedLines(content string, legacy bool) []string {
	if legacy {
		return strings.Split(content, "\n")
	}
	if content == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(content, "\n"), "\n")
}

// truncateHead keeps the first lines that fit (file reads): never a
// partial line; a first line over the byte limit gives empty content.
func truncateHead(content string, maxLines, maxBytes int, legacy bool) truncation {
	totalBytes := len(content)
	lines := countedLines(content, legacy)
	t := truncation{TotalLines: len(lines), TotalBytes: totalBytes, MaxLines: maxLines, MaxBytes: maxBytes}
	if len(lines) <= maxLines && totalBytes <= maxBytes {
		t.Content, t.OutputLines, t.OutputBytes = content, len(lines), totalBytes
		return t
	}
	t.Truncated = true
	if len(lines[0]) > maxBytes {
		t.TruncatedBy, t.FirstLineExceedsLimit = "bytes", true
		return t
	}
	n, size := 0, 0
	t.TruncatedBy = "lines"
	for i := 0; i < len(lines) && i < maxLines; i++ {
		lb := len(lines[i])
		if i > 0 {
			lb++
		}
		if size+lb > maxBytes {
			t.TruncatedBy = "bytes"
			break
		}
		n++
		size += lb
	}
	if n >= maxLines && size <= maxBytes {
		t.TruncatedBy = "lines"
	}
	t.Content = strings.Join(lines[:n], "\n")
	t.OutputLines, t.OutputBytes = n, len(t.Content)
	return t
}

// truncateTail keeps the last lines that fit (command output); when the
// last line alone is over the byte limit its end is kept.
func truncateTail(content string, maxLines, maxBytes int, legacy bool) truncation {
	totalBytes := len(content)
	lines := countedLines(content, legacy)
	t := truncation{TotalLines: len(lines), TotalBytes: totalBytes, MaxLines: maxLines, MaxBytes: maxBytes}
	if len(lines) <= maxLines && totalBytes <= maxBytes {
		t.Content, t.OutputLines, t.OutputBytes = content, len(lines), totalBytes
		return t
	}
	t.Truncated, t.TruncatedBy = true, "lines"
	var out []string
	size := 0
	for i := len(lines) - 1; i >= 0 && len(out) < maxLines; i-- {
		lb := len(lines[i])
		if len(out) > 0 {
			lb++
		}
		if size+lb > maxBytes {
			t.TruncatedBy = "bytes"
			if len(out) == 0 {
				part := tailBytes(lines[i], maxBytes)
				out = append(out, part)
				size = len(part)
				t.LastLinePartial = true
			}
			break
		}
		out = append(out, lines[i])
		size += lb
	}
	if len(out) >= maxLines && size <= maxBytes {
		t.TruncatedBy = "lines"
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	t.Content = strings.Join(out, "\n")
	t.OutputLines, t.OutputBytes = len(out), len(t.Content)
	return t
}

// tailBytes is the end of s within max bytes, starting on a character.
func tailBytes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	start := len(s) - max
	for start < len(s) && s[start]&0xC0 == 0x80 {
		start++
	}
	return s[start:]
}

// truncateLine cuts a grep line to max UTF-16 units with "... [truncated]".
func truncateLine(line string, max int) (string, bool) {
	if jsstr.Len(line) <= max {
		return line, false
	}
	return jsstr.Prefix(line, max) + "... [truncated]", true
}

// jsObject writes a JSON object as JSON.stringify does: compact, keys in
// insertion order, strings escaped the JavaScript way.
type jsObject struct{ b []byte }

func (o *jsObject) key(k string) {
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = jsstr.AppendQuote(o.b, k)
	o.b = append(o.b, ':')
}

func (o *jsObject) str(k, v string) { o.key(k); o.b = jsstr.AppendQuote(o.b, v) }
func (o *jsObject) num(k string, v int) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, int64(v), 10)
}
func (o *jsObject) boolean(k string, v bool) { o.key(k); o.b = strconv.AppendBool(o.b, v) }
func (o *jsObject) raw(k, v string)          { o.key(k); o.b = append(o.b, v...) }

func (o *jsObject) bytes() []byte {
	if len(o.b) == 0 {
		return []byte("{}")
	}
	return append(o.b, '}')
}

func (o *jsObject) empty() bool { return len(o.b) == 0 }

// native returns the object as Fresh.Native, nil when it has no keys
// (pi leaves details undefined then, and JSON.stringify drops the key).
func (o *jsObject) native() json.RawMessage {
	if o.empty() {
		return nil
	}
	return json.RawMessage(o.bytes())
}
