package bridge

import (
	"bytes"
	"errors"
	"net"
	"testing"
)

// recConn records what reaches the socket.
type recConn struct {
	net.Conn
	got    bytes.Buffer
	writes int
	err    error
}

func (c *recConn) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	c.writes++
	return c.got.Write(p)
}

func TestCoalescingConn(t *testing.T) {
	big := bytes.Repeat([]byte("x"), bigPiece+1)
	for _, tc := range []struct {
		name   string
		pieces [][]byte
	}{
		{"small pieces", [][]byte{[]byte("8000\r\n"), []byte("data"), []byte("\r\n")}},
		{"server buffer, then the caller's slice, then crlf", [][]byte{bytes.Repeat([]byte("h"), bigPiece), big, []byte("\r\n")}},
		{"nothing", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &recConn{}
			c := &coalescingConn{Conn: rc}
			c.hold()
			var want []byte
			scratch := make([]byte, bigPiece) // reused like the server's buffer
			for _, p := range tc.pieces {
				want = append(want, p...)
				src := p
				if len(p) <= bigPiece {
					src = append(scratch[:0], p...)
				}
				if n, err := c.Write(src); n != len(p) || err != nil {
					t.Fatalf("held Write = %d, %v", n, err)
				}
				clear(scratch) // the server reuses its buffer once Write returns
			}
			if rc.writes != 0 {
				t.Fatalf("%d writes reached the socket before release", rc.writes)
			}
			if err := c.release(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(rc.got.Bytes(), want) {
				t.Fatalf("socket got %q…, want %q…", rc.got.Bytes()[:min(20, rc.got.Len())], want[:min(20, len(want))])
			}
			// Once released, writes go straight through again.
			if _, err := c.Write([]byte("0\r\n\r\n")); err != nil || !bytes.HasSuffix(rc.got.Bytes(), []byte("0\r\n\r\n")) {
				t.Fatalf("unheld write did not reach the socket: %v", err)
			}
		})
	}
}

func TestCoalescingConnReleaseError(t *testing.T) {
	boom := errors.New("connection reset")
	c := &coalescingConn{Conn: &recConn{err: boom}}
	c.hold()
	if _, err := c.Write([]byte("event")); err != nil {
		t.Fatalf("a held write fails only at release, got %v", err)
	}
	if err := c.release(); !errors.Is(err, boom) {
		t.Fatalf("release = %v, want %v", err, boom)
	}
	if len(c.pieces) != 0 || len(c.scratch) != 0 {
		t.Fatal("release kept pieces after a failed write")
	}
}
