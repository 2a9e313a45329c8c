package jsondoc

import (
	"bytes"
	"io"
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
