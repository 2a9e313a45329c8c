// Package jsondoc walks one JSON document (or a stream of them) a value at a
// time, for the formats whose sessions are a single JSON document rather than
// JSONL (OpenHands event arrays, mini-swe-agent trajectories). Memory stays
// bounded by the largest value read, not by the file, and every failure comes
// back as a *trajectory.Error at the physical line it happened on, so a user
// can open the file there.
//
// Methods take a what argument: the name of the part being read ("the event
// array", "messages"), which starts the error message.
package jsondoc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/pvisor/pvisor/trajectory"
)

// Doc reads one JSON document through encoding/json's Decoder.
type Doc struct {
	dec     *json.Decoder
	lc      *lineCounter
	scratch json.RawMessage
	start   int64 // where the last value read by Raw or Skip starts
}

// New returns a Doc reading r. It buffers r itself.
func New(r io.Reader) *Doc {
	lc := &lineCounter{r: r}
	return &Doc{dec: json.NewDecoder(lc), lc: lc}
}

// Records says where a document keeps the array of records a prefix is cut
// from (events, messages), and what errors call its parts.
type Records struct {
	Key      string // the member of a top-level object that holds the array
	Object   string // what errors call that object, e.g. "trajectory"
	Expected string // what the document should be: "expected <Expected>, found a string"
	Missing  string // the error when the object has no Key
}

// OpenRecords starts reading the document r holds and leaves the Doc just
// inside its array of records: the document itself when it is an array, or
// the array under where.Key when it is an object. The members before Key
// are read whole (so they are still checked), then dropped.
func OpenRecords(r io.Reader, where Records) (*Doc, error) {
	d := New(r)
	tok, err := d.Token("start of file")
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('['):
		return d, nil
	case json.Delim('{'):
		found, err := d.findKey(where.Key, where.Object)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, trajectory.Errorf(1, "%s", where.Missing)
		}
		if err := d.Delim('[', where.Key); err != nil {
			return nil, err
		}
		return d, nil
	}
	return nil, trajectory.Errorf(1, "expected %s, found %s", where.Expected, TokenKind(tok))
}

// Open reads the document's first token. Input holding nothing but
// whitespace is refused as "the file is empty" (line 0: there is no line to
// point at), anything else unreadable as invalid or truncated JSON.
func (d *Doc) Open() (json.Token, error) {
	tok, err := d.dec.Token()
	if errors.Is(err, io.EOF) {
		return nil, trajectory.Errorf(0, "the file is empty")
	}
	if err != nil {
		return nil, d.fail(err, "start of file")
	}
	return tok, nil
}

// Token reads the next token (a delimiter, key or scalar).
func (d *Doc) Token(what string) (json.Token, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return nil, d.fail(err, what)
	}
	return tok, nil
}

// More reports whether the current array or object has another element.
func (d *Doc) More() bool { return d.dec.More() }

// Delim reads the next token and requires it to be the delimiter want.
func (d *Doc) Delim(want json.Delim, what string) error {
	start := d.dec.InputOffset()
	tok, err := d.dec.Token()
	if err != nil {
		return d.fail(err, what)
	}
	if got, ok := tok.(json.Delim); !ok || got != want {
		return trajectory.Errorf(d.lc.line(start), "%s: expected %q, found %s", what, string(want), TokenKind(tok))
	}
	return nil
}

// Key reads an object key. Call it only where More said a member follows:
// the Decoder itself refuses anything but a string there.
func (d *Doc) Key(what string) (string, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return "", d.fail(err, what)
	}
	k, _ := tok.(string)
	return k, nil
}

// findKey reads the members of the object d is in until the key want, and
// reports whether it came; the value is left unread. Values of other keys
// are read whole (so they are still checked), then dropped.
func (d *Doc) findKey(want, what string) (bool, error) {
	for d.dec.More() {
		k, err := d.Key(what)
		if err != nil {
			return false, err
		}
		if k == want {
			return true, nil
		}
		if err := d.Skip(k); err != nil {
			return false, err
		}
	}
	return false, nil
}

// Raw reads the next value whole and returns it with the 1-based line it
// starts on. The bytes are valid UTF-8 and stay valid until the next call.
func (d *Doc) Raw(what string) ([]byte, int, error) {
	if err := d.dec.Decode(&d.scratch); err != nil {
		return nil, 0, d.fail(err, what)
	}
	d.start = d.dec.InputOffset() - int64(len(d.scratch))
	line := d.lc.line(d.start)
	if !utf8.Valid(d.scratch) {
		return nil, 0, trajectory.Errorf(line, "%s: not valid UTF-8", what)
	}
	return d.scratch, line, nil
}

// Skip reads the next value and drops it, checking it as Raw does.
func (d *Doc) Skip(what string) error {
	_, _, err := d.Raw(what)
	return err
}

// Span returns where the value last read by Raw or Skip lies in the input:
// its first byte and the byte just past it.
func (d *Doc) Span() (start, end int64) {
	return d.start, d.start + int64(len(d.scratch))
}

// Offset is the input offset just past the last token or value read. More
// also moves it, past the whitespace before the next one.
func (d *Doc) Offset() int64 { return d.dec.InputOffset() }

// LineAt returns the 1-based line of byte offset off. Offsets must be asked
// for in increasing order (the walk goes forwards, and the newlines before
// the last offset asked about are forgotten); an earlier one gets that
// offset's line.
func (d *Doc) LineAt(off int64) int { return d.lc.line(off) }

// End requires that nothing but whitespace follows the document.
func (d *Doc) End(what string) error {
	if d.dec.More() {
		return trajectory.Errorf(d.lc.line(d.dec.InputOffset()), "unexpected data after %s", what)
	}
	if _, err := d.dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return d.fail(err, "after "+what)
	}
	return nil
}

// fail turns an error from reading the document into a *trajectory.Error
// at the line it happened on: invalid JSON, a number no float64 holds, or a
// document that ends early.
// A *trajectory.Error passes through, and so does any other error (the
// reader's own, such as a failing disk), which is not the file's fault.
func (d *Doc) fail(err error, what string) error {
	var te *trajectory.Error
	if errors.As(err, &te) {
		return err
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// The Decoder's own token checks report the offset of the byte at
		// fault, InputOffset. Its scanner's errors carry the count of every
		// byte it has scanned in the document so far, no use here. The
		// value that failed starts at InputOffset (the Decoder does not
		// move past it) and the fault lies in what the Decoder has
		// buffered, so scanning that afresh finds the scanner's error
		// again, at an offset from the value's start.
		at := d.dec.InputOffset()
		if off, ok := rescan(d.dec.Buffered(), se); ok {
			at += off
		}
		return trajectory.Errorf(d.lc.line(at), "%s: invalid JSON: %v", what, se)
	case errors.As(err, new(*json.UnmarshalTypeError)):
		// A number too large for float64, as Token decodes scalars.
		return trajectory.Errorf(d.lc.line(d.dec.InputOffset()), "%s: %v", what, err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &trajectory.Error{Kind: trajectory.Malformed, Line: d.lc.line(d.lc.off),
			Msg:  fmt.Sprintf("%s: the JSON document ends early", what),
			Hint: "the file is truncated, perhaps copied while it was being written"}
	}
	return err
}

// rescan scans the value r starts with and returns the 0-based offset of
// the syntax error se in it, if scanning it is what reports se.
func rescan(r io.Reader, se *json.SyntaxError) (int64, bool) {
	var v json.RawMessage
	var again *json.SyntaxError
	if err := json.NewDecoder(r).Decode(&v); errors.As(err, &again) && again.Offset > 0 && again.Error() == se.Error() {
		return again.Offset - 1, true
	}
	return 0, false
}
