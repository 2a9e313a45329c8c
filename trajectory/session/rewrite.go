package session

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// LineEditor returns the spans of one complete JSON line (1-based number n)
// whose string value is to be replaced; nil keeps the line. It is only
// called for lines that are valid JSON, so a torn last line is never seen.
type LineEditor func(n int, line []byte) ([]Span, error)

// Span is a JSON string value inside a line: its byte offset and length,
// quotes included (gjson's Result.Index and len(Result.Raw)). With, when
// set, is the JSON string written there instead of the new cwd itself (a
// value that holds the cwd inside other text, such as Pi's "<cwd>\n…\n</cwd>").
type Span struct {
	Off, Len int
	With     []byte
}

// RewriteLines copies r to w line by line, replacing the spans edit picks
// with the JSON string to. Every other byte, blank lines, line endings and a
// torn or non-JSON line included, is written as read, so a rewrite from A
// to B and back gives the original bytes whenever the file spelled A as
// JSON.stringify does. Memory is bounded by the longest line.
func RewriteLines(w io.Writer, r io.Reader, to string, edit LineEditor) (int, error) {
	lr := lineReader{br: bufio.NewReaderSize(r, 256<<10)}
	bw := bufio.NewWriterSize(w, 256<<10)
	quoted := jsstr.AppendQuote(nil, to)
	var out []byte
	total := 0
	for n := 1; ; n++ {
		line, terminated, err := lr.next()
		if err != nil {
			return total, err
		}
		if line == nil && !terminated {
			break
		}
		data := line
		if gjson.ValidBytes(line) {
			spans, err := edit(n, line)
			if err != nil {
				return total, fmt.Errorf("line %d: %w", n, err)
			}
			if len(spans) > 0 {
				out = splice(out[:0], line, spans, quoted)
				data = out
				total += len(spans)
			}
		}
		if _, err := bw.Write(data); err != nil {
			return total, err
		}
		if terminated {
			if err := bw.WriteByte('\n'); err != nil {
				return total, err
			}
		}
	}
	return total, bw.Flush()
}

// lineReader yields physical lines, whatever they hold, without their
// newline; memory is bounded by jsonl.MaxLineBytes.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
}

// next returns the next line and whether a newline ended it; nil and
// false at the end (a blank line may be nil, but ends in a newline).
func (r *lineReader) next() ([]byte, bool, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.buf)+len(chunk) > jsonl.MaxLineBytes {
			return nil, false, fmt.Errorf("a line is longer than %d MiB: is this a session file?", jsonl.MaxLineBytes>>20)
		}
		switch {
		case err == nil:
			r.buf = append(r.buf, chunk[:len(chunk)-1]...)
			return r.buf, true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			r.buf = append(r.buf, chunk...)
		case errors.Is(err, io.EOF):
			r.buf = append(r.buf, chunk...)
			if len(r.buf) == 0 {
				return nil, false, nil
			}
			return r.buf, false, nil
		default:
			return nil, false, err
		}
	}
}

func splice(dst, line []byte, spans []Span, quoted []byte) []byte {
	sort.Slice(spans, func(i, j int) bool { return spans[i].Off < spans[j].Off })
	at := 0
	for _, s := range spans {
		dst = append(dst, line[at:s.Off]...)
		if s.With != nil {
			dst = append(dst, s.With...)
		} else {
			dst = append(dst, quoted...)
		}
		at = s.Off + s.Len
	}
	return append(dst, line[at:]...)
}

// MaxDocumentBytes caps a session that is one JSON document (an OpenCode
// export) rather than lines: it is read whole.
const MaxDocumentBytes = 256 << 20

// RewriteDocument copies the one JSON document in r to w with the spans
// edit picks (offsets into the document) replaced by the JSON string to;
// every other byte, indentation included, is written as read.
func RewriteDocument(w io.Writer, r io.Reader, to string, edit func(doc []byte) ([]Span, error)) (int, error) {
	doc, err := io.ReadAll(io.LimitReader(r, MaxDocumentBytes+1))
	if err != nil {
		return 0, err
	}
	if len(doc) > MaxDocumentBytes {
		return 0, fmt.Errorf("the document is larger than %d MiB", MaxDocumentBytes>>20)
	}
	if !gjson.ValidBytes(doc) {
		return 0, fmt.Errorf("not one JSON document (cut short?)")
	}
	spans, err := edit(doc)
	if err != nil {
		return 0, err
	}
	if len(spans) > 0 {
		doc = splice(nil, doc, spans, jsstr.AppendQuote(nil, to))
	}
	_, err = w.Write(doc)
	return len(spans), err
}

// StringAt returns the span of v when it is a JSON string equal to from.
// gjson leaves Index at 0 when it cannot tell where a value is; no string
// value of a JSON object line starts at byte 0, so that is an error.
func StringAt(v gjson.Result, from string) (Span, bool, error) {
	if v.Type != gjson.String || v.Str != from {
		return Span{}, false, nil
	}
	if v.Index <= 0 {
		return Span{}, false, fmt.Errorf("cannot locate the cwd value %s in the line", v.Raw)
	}
	return Span{Off: v.Index, Len: len(v.Raw)}, true, nil
}

// CheckRewrite refuses an empty or identical pair before any byte is read.
func CheckRewrite(from, to string) error {
	if from == "" || to == "" {
		return fmt.Errorf("both the old and the new cwd are needed (--from and --to)")
	}
	return nil
}

// Scan calls fn with each JSON line of r until fn returns true; a torn last
// line ends the scan quietly.
func Scan(r io.Reader, fn func(line []byte) bool) error {
	jr := jsonl.NewReader(r)
	for jr.Next() {
		if fn(jr.Line().Data) {
			return nil
		}
	}
	return jr.Err()
}
