// Package jsonl streams the lines of a JSON Lines file with the checks every
// native format shares: UTF-8, one JSON object per line, a line-size cap, and
// a tolerated torn final line. Memory is bounded by the longest line.
package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
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
//
// It reads the stream in batches of whole lines and validates each batch on
// every core while the caller decodes the batch before it: validation is
// most of the cost of a large file, and it needs no state from earlier lines.
// Reading stays in the caller's goroutine (so a reader that hashes what
// passes through it sees the bytes in order, and nothing reads once Next has
// returned false), and a batch's validation ends on its own, so an abandoned
// Reader leaves nothing running for long. Memory is two batches plus the
// longest line.
type Reader struct {
	src        io.Reader
	cur, next  *batch
	pos        int    // next unread byte of cur.data
	carry      []byte // the partial line after the last newline read
	spare      []byte // cur's buffer once consumed, reused by the next fill
	line       Line
	n          int
	off        int64
	err        error
	torn       *trajectory.TornTail
	nLines     int
	srcDone    bool
	srcErr     error
	batchBytes int

	allowJoined bool
	joined      []Joined
	recheck     *batch // a batch whose lines after a skipped joined line are validated here
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

// batchBytes is the size a batch is read to before it is cut at its last
// newline: big enough that a core validates for a while, small enough that two
// batches stay a few MiB.
const batchBytes = 1 << 20

// NewReader reads from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{src: r, batchBytes: batchBytes}
}

// batch is a run of whole lines; after the last batch of the stream its final
// line may be unterminated, and a line already longer than MaxLineBytes may
// be cut short (it is an error either way).
type batch struct {
	data []byte
	last bool  // nothing follows: end of stream, a read error, or an overlong line
	err  error // the read error that ended the stream, reported after data
	wg   sync.WaitGroup
	bad  []int // per segment: offset of its first invalid line, -1 if none
}

// firstBad is the offset of the batch's first invalid line, -1 if none. It
// waits for the validation.
func (b *batch) firstBad() int {
	b.wg.Wait()
	first := -1
	for _, o := range b.bad {
		if o >= 0 && (first < 0 || o < first) {
			first = o
		}
	}
	return first
}

// Next advances to the next object line. It returns false at the end of the
// stream or on the first bad line; Err tells which.
func (r *Reader) Next() bool {
	if r.err != nil || r.torn != nil {
		return false
	}
	for {
		if r.cur == nil || r.pos >= len(r.cur.data) {
			if r.cur != nil && r.cur.last {
				r.err = r.cur.err
				return false
			}
			r.advance()
			continue
		}
		b := r.cur
		lineStart := r.pos
		rest := b.data[lineStart:]
		k := bytes.IndexByte(rest, '\n')
		terminated := k >= 0
		size := k + 1
		if !terminated {
			k, size = len(rest), len(rest)
		}
		data := rest[:k]
		r.pos += size
		r.n++
		start := r.off
		r.off += int64(size)
		r.nLines = r.n
		if size > MaxLineBytes {
			r.err = &trajectory.Error{Kind: trajectory.Malformed, Line: r.n,
				Msg:  fmt.Sprintf("line is longer than %d MiB", MaxLineBytes>>20),
				Hint: "is this a session file? native sessions keep each record on one short line"}
			return false
		}
		trimmed := bytes.TrimSpace(data)
		if len(trimmed) == 0 {
			continue
		}
		bad := lineStart == b.firstBad()
		if !bad && r.recheck == b {
			bad = trimmed[0] != '{' || !valid(trimmed)
		}
		if bad {
			if !terminated {
				r.torn = &trajectory.TornTail{Line: r.n, Offset: start, Bytes: len(data)}
				return false
			}
			if r.allowJoined && utf8.Valid(trimmed) {
				if recs := splitJoined(trimmed); recs != nil {
					r.joined = append(r.joined, Joined{Line: r.n, Offset: start, Records: recs})
					// firstBad names only a batch's first invalid line;
					// the rest of this batch is checked line by line.
					r.recheck = b
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

// advance makes the batch being validated current and starts on the one
// after it.
func (r *Reader) advance() {
	if r.cur != nil {
		r.cur.wg.Wait() // a batch of blank lines was never asked for its verdict
		r.spare = r.cur.data[:0]
	}
	if r.next == nil {
		r.next = r.fill(nil)
	}
	r.cur, r.pos, r.next = r.next, 0, nil
	if !r.cur.last {
		r.next = r.fill(r.spare)
		r.spare = nil
	}
}

// fill reads the next batch into buf and starts its validation.
func (r *Reader) fill(buf []byte) *batch {
	b := &batch{}
	data := append(buf[:0], r.carry...)
	r.carry = r.carry[:0]
	if cap(data) < r.batchBytes {
		data = slices.Grow(data, r.batchBytes-len(data))
	}
	// Fill the buffer, then cut it after its last newline; only a line longer
	// than the buffer makes it grow, so a batch's memory stays batchBytes.
	scanned := 0 // data[:scanned] was searched for newlines
	cut := -1    // just past the last newline in data
	for !r.srcDone {
		if len(data) < cap(data) {
			n, err := r.src.Read(data[len(data):cap(data)])
			data = data[:len(data)+n]
			switch {
			case errors.Is(err, io.EOF):
				r.srcDone = true
			case err != nil:
				r.srcDone, r.srcErr = true, err
			}
			continue
		}
		if i := bytes.LastIndexByte(data[scanned:], '\n'); i >= 0 {
			cut = scanned + i + 1
		}
		scanned = len(data)
		if cut >= 0 || len(data) > MaxLineBytes {
			break
		}
		data = slices.Grow(data, len(data))
	}
	if i := bytes.LastIndexByte(data[scanned:], '\n'); i >= 0 {
		cut = scanned + i + 1
	}
	switch {
	case r.srcErr != nil:
		// The partial line before a read error is dropped, never yielded.
		b.last, b.err = true, r.srcErr
		data = data[:max(cut, 0)]
	case r.srcDone:
		b.last = true
	case len(data)-max(cut, 0) > MaxLineBytes:
		// The line after the cut is already too long: it ends the stream.
		b.last = true
	default:
		r.carry = append(r.carry, data[cut:]...)
		data = data[:cut]
	}
	b.data = data
	r.validate(b)
	return b
}

// validate checks b's lines in segments cut at newlines, one per core, in
// the background when the batch is big enough to be worth it.
func (r *Reader) validate(b *batch) {
	segs := 1
	if len(b.data) >= 256<<10 {
		segs = runtime.GOMAXPROCS(0)
	}
	b.bad = make([]int, 0, segs)
	lo := 0
	for s := range segs {
		hi := len(b.data)
		if s < segs-1 {
			hi = lo + (len(b.data)-lo)/(segs-s)
			if i := bytes.IndexByte(b.data[hi:], '\n'); i >= 0 {
				hi += i + 1
			} else {
				hi = len(b.data)
			}
		}
		if hi <= lo {
			break
		}
		b.bad = append(b.bad, -1)
		slot := &b.bad[len(b.bad)-1]
		seg, base := b.data[lo:hi], lo
		if segs == 1 {
			*slot = firstInvalid(seg, base)
			break
		}
		b.wg.Go(func() { *slot = firstInvalid(seg, base) })
		lo = hi
	}
}

// firstInvalid returns base plus the offset in seg of the first line that is
// not blank and not a valid JSON object, or -1. Overlong lines are left to
// Next, which refuses them by length.
func firstInvalid(seg []byte, base int) int {
	for off := 0; off < len(seg); {
		line := seg[off:]
		size := len(line)
		if k := bytes.IndexByte(line, '\n'); k >= 0 {
			line, size = line[:k], k+1
		}
		if size <= MaxLineBytes {
			if t := bytes.TrimSpace(line); len(t) > 0 && (t[0] != '{' || !valid(t)) {
				return base + off
			}
		}
		off += size
	}
	return -1
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
