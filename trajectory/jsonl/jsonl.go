// Package jsonl streams the lines of a JSON Lines file with the checks every
// native format shares: UTF-8, one JSON object per line, a line-size cap, and
// a tolerated torn final line. Memory is bounded by the longest line.
package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// MaxLineBytes caps one line. Agents truncate tool output long before this;
// a longer line is almost certainly not a session file.
const MaxLineBytes = 16 << 20

// Line is one non-blank line. Data is only valid until the next call to Next.
type Line struct {
	N      int   // 1-based physical line number
	Offset int64 // byte offset of the line's first byte
	Data   []byte
	End    int64 // byte offset just past the line's newline (or end of file)
}

// Reader yields the object lines of a JSONL stream.
type Reader struct {
	br     *bufio.Reader
	line   Line
	n      int
	off    int64
	err    error
	torn   *trajectory.TornTail
	buf    []byte
	nLines int

	allowJoined bool
	joined      []Joined
}

// Joined is a line that holds several complete records with no newline
// between them (an agent wrote a record without its newline, then appended
// the next one after a restart). Agents that JSON.parse each line skip it
// as malformed.
type Joined struct {
	Line    int
	Offset  int64
	Records []json.RawMessage // copies of the records, in order
}

// SkipJoined makes Next skip lines that hold several complete objects back
// to back, as loaders that parse line by line and drop malformed lines do;
// Joined lists them. Any other invalid line is still an error.
func (r *Reader) SkipJoined() { r.allowJoined = true }

// Joined returns the skipped joined lines, in file order.
func (r *Reader) Joined() []Joined { return r.joined }

// splitJoined returns the objects of a line that is two or more complete
// JSON objects back to back, nil for anything else. It runs only on lines
// that failed validation.
func splitJoined(b []byte) []json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(b))
	var out []json.RawMessage
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || len(v) == 0 || v[0] != '{' {
			return nil
		}
		out = append(out, v)
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// NewReader reads from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 256<<10)}
}

// Next advances to the next object line. It returns false at the end of the
// stream or on the first bad line; Err tells which.
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	for {
		data, terminated, err := r.readLine()
		if err != nil {
			r.err = err
			return false
		}
		if data == nil {
			return false
		}
		r.n++
		start := r.off
		r.off += int64(len(data))
		if terminated {
			r.off++
		}
		r.nLines = r.n
		trimmed := bytes.TrimSpace(data)
		if len(trimmed) == 0 {
			continue
		}
		if trimmed[0] != '{' || !valid(trimmed) {
			if !terminated {
				r.torn = &trajectory.TornTail{Line: r.n, Offset: start, Bytes: len(data)}
				return false
			}
			if r.allowJoined && utf8.Valid(trimmed) {
				if recs := splitJoined(trimmed); recs != nil {
					r.joined = append(r.joined, Joined{Line: r.n, Offset: start, Records: recs})
					continue
				}
			}
			r.err = lineError(r.n, trimmed)
			return false
		}
		r.line = Line{N: r.n, Offset: start, Data: trimmed, End: r.off}
		return true
	}
}

// readLine returns the next physical line without its newline; nil at EOF.
func (r *Reader) readLine() ([]byte, bool, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.buf)+len(chunk) > MaxLineBytes {
			return nil, false, &trajectory.Error{Kind: trajectory.Malformed, Line: r.n + 1,
				Msg:  fmt.Sprintf("line is longer than %d MiB", MaxLineBytes>>20),
				Hint: "is this a session file? native sessions keep each record on one short line"}
		}
		switch {
		case err == nil:
			if len(r.buf) == 0 {
				return chunk[:len(chunk)-1], true, nil
			}
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

// Line returns the current line.
func (r *Reader) Line() Line { return r.line }

// Err returns the first error, nil at a clean end of stream.
func (r *Reader) Err() error { return r.err }

// Torn returns the ignored torn final line, if there was one.
func (r *Reader) Torn() *trajectory.TornTail { return r.torn }

// Lines returns the number of physical lines read so far.
func (r *Reader) Lines() int { return r.nLines }

// lineError says what is wrong with a line that failed validation; it runs
// only on the error path, so it may be slow.
func lineError(n int, b []byte) error {
	switch {
	case !utf8.Valid(b):
		return trajectory.Errorf(n, "not valid UTF-8")
	case b[0] != '{' && gjson.ValidBytes(b):
		return trajectory.Errorf(n, "expected a JSON object, found %s", kindOf(b))
	default:
		return trajectory.Errorf(n, "not valid JSON")
	}
}

func kindOf(b []byte) string {
	switch gjson.ParseBytes(b).Type {
	case gjson.JSON:
		return "an array"
	case gjson.String:
		return "a string"
	case gjson.Number:
		return "a number"
	case gjson.Null:
		return "null"
	default:
		return "a boolean"
	}
}
