package miniswe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/pvisor/pvisor/trajectory"
)

// lineCounter remembers where the newlines are in the bytes the JSON decoder
// has read ahead but not yet consumed, so that an offset the decoder reports
// becomes a physical line number for error messages. Offsets are asked for in
// increasing order, so everything before the last one is forgotten: memory is
// bounded by the decoder's read-ahead, not by the file.
type lineCounter struct {
	r      io.Reader
	off    int64   // bytes read so far
	nl     []int64 // offsets of newlines at or after the last query
	passed int     // newlines before the last query
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	b := p[:n]
	base := c.off
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		c.nl = append(c.nl, base+int64(i))
		base += int64(i) + 1
		b = b[i+1:]
	}
	c.off += int64(n)
	return n, err
}

// line returns the 1-based line of byte offset off.
func (c *lineCounter) line(off int64) int {
	k := 0
	for k < len(c.nl) && c.nl[k] < off {
		k++
	}
	c.passed += k
	c.nl = c.nl[k:]
	return c.passed + 1
}

// doc walks one JSON document (or a stream of them) a value at a time.
type doc struct {
	dec     *json.Decoder
	lc      *lineCounter
	scratch json.RawMessage
}

func newDoc(r io.Reader) *doc {
	lc := &lineCounter{r: r}
	return &doc{dec: json.NewDecoder(lc), lc: lc}
}

// fail turns a decoder error into a *trajectory.Error at the right line.
func (d *doc) fail(err error, what string) error {
	var te *trajectory.Error
	if errors.As(err, &te) {
		return err
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// The Decoder's own token checks report absolute offsets, its
		// scanner offsets relative to the value it was reading, which
		// starts at InputOffset (the Decoder does not advance past a value
		// that failed).
		at := d.dec.InputOffset()
		if se.Offset != at {
			at += se.Offset - 1
		}
		return trajectory.Errorf(d.lc.line(at), "%s: invalid JSON: %v", what, se)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &trajectory.Error{Kind: trajectory.Malformed, Line: d.lc.line(d.lc.off),
			Msg:  fmt.Sprintf("%s: the JSON document ends early", what),
			Hint: "the file is truncated, perhaps copied while it was being written"}
	}
	return err
}

// delim reads the next token and requires it to be the delimiter want.
func (d *doc) delim(want json.Delim, what string) error {
	start := d.dec.InputOffset()
	tok, err := d.dec.Token()
	if err != nil {
		return d.fail(err, what)
	}
	if got, ok := tok.(json.Delim); !ok || got != want {
		return trajectory.Errorf(d.lc.line(start), "%s: expected %q, found %s", what, string(want), tokenKind(tok))
	}
	return nil
}

// key reads an object key.
func (d *doc) key(what string) (string, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return "", d.fail(err, what)
	}
	k, _ := tok.(string)
	return k, nil
}

// raw reads the next value whole, returning it and its 1-based line and
// start offset. The bytes are valid until the next call.
func (d *doc) raw(what string) ([]byte, int, int64, error) {
	if err := d.dec.Decode(&d.scratch); err != nil {
		return nil, 0, 0, d.fail(err, what)
	}
	end := d.dec.InputOffset()
	start := end - int64(len(d.scratch))
	line := d.lc.line(start)
	if !utf8.Valid(d.scratch) {
		return nil, 0, 0, trajectory.Errorf(line, "%s: not valid UTF-8", what)
	}
	return d.scratch, line, start, nil
}

// end requires that nothing but whitespace follows the document.
func (d *doc) end(what string) error {
	if d.dec.More() {
		return trajectory.Errorf(d.lc.line(d.dec.InputOffset()), "unexpected data after %s", what)
	}
	if _, err := d.dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return d.fail(err, "after "+what)
	}
	return nil
}

func tokenKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return fmt.Sprintf("%q", string(v))
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}
