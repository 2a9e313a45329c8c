package bridge

import (
	"context"
	"net"
)

// The HTTP server sends one relayed read as three writes to the socket: its 4 KiB
// buffer filled with the chunk header and the first bytes, the rest of the data,
// and the chunk's CRLF on Flush. On loopback each write is a packet the client's
// side of the kernel processes at once, so a stream of 32 KiB events cost three
// times the syscalls and packets a direct upstream needs. A coalescingConn holds
// the writes between hold and release and sends them with one writev: the client
// still gets every byte at each flush, in one packet train instead of three.

// coalescingListener wraps every accepted connection.
type coalescingListener struct{ net.Listener }

func (l coalescingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &coalescingConn{Conn: c}, nil
}

// bigPiece is the size from which a held write is the caller's own slice: the
// server's buffered writer is 4 KiB and only hands over larger slices it was
// given. The relay leaves its buffer untouched until release, so such a piece is
// referenced rather than copied.
const bigPiece = 4 << 10

// coalescingConn is written by one goroutine at a time (the connection's serving
// goroutine); Close may come from another and goes straight to the socket.
type coalescingConn struct {
	net.Conn
	holding bool
	pieces  net.Buffers
	scratch []byte
}

// hold starts gathering writes.
func (c *coalescingConn) hold() { c.holding = true }

// release sends what was gathered in one writev and stops gathering. Its error is
// the write error the held writes would have had.
func (c *coalescingConn) release() error {
	c.holding = false
	if len(c.pieces) == 0 {
		return nil
	}
	bufs := c.pieces
	_, err := bufs.WriteTo(c.Conn)
	clear(c.pieces) // drop references to the caller's buffer
	c.pieces, c.scratch = c.pieces[:0], c.scratch[:0]
	return err
}

func (c *coalescingConn) Write(p []byte) (int, error) {
	if !c.holding {
		return c.Conn.Write(p)
	}
	if len(p) > bigPiece {
		c.pieces = append(c.pieces, p)
		return len(p), nil
	}
	// A small piece is the server's own buffer, reused after Write returns. If
	// scratch grows, earlier pieces keep the old array alive and intact.
	start := len(c.scratch)
	c.scratch = append(c.scratch, p...)
	c.pieces = append(c.pieces, c.scratch[start:len(c.scratch):len(c.scratch)])
	return len(p), nil
}

// CloseWrite lets the server half-close the connection as it does a TCP one.
func (c *coalescingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

type connKey struct{}

// withConn is the server's ConnContext: handlers find their connection's
// coalescer with connOf.
func withConn(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*coalescingConn); ok {
		return context.WithValue(ctx, connKey{}, cc)
	}
	return ctx
}

// connOf is the request's coalescer, or nil (a handler served some other way).
func connOf(ctx context.Context) *coalescingConn {
	cc, _ := ctx.Value(connKey{}).(*coalescingConn)
	return cc
}
