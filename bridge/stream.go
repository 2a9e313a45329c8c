package bridge

import (
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
)

// hopByHop are the connection-level headers of RFC 9110 §7.6.1 (plus the legacy
// Proxy-Connection and Keep-Alive); they describe one hop and are never forwarded.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// removeHopByHop deletes hop-by-hop headers and every header named in Connection.
func removeHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

// stripRequestHeaders leaves what may travel upstream: the client's credentials
// hold the bridge token, Accept-Encoding would let the upstream compress (the
// upstream side sets identity), Content-Encoding and Content-Length describe the
// body before the bridge decoded and rewrote it, and cookies have no business with
// a model API. Expect is answered by the bridge's own server; the upstream gets the
// whole body at once.
func stripRequestHeaders(h http.Header) {
	removeHopByHop(h)
	for _, name := range []string{"Authorization", "X-Api-Key", "Api-Key", "Cookie",
		"Accept-Encoding", "Content-Encoding", "Content-Length", "Expect", "Host", "Origin", "Referer"} {
		h.Del(name)
	}
}

// copyResponseHeaders copies the upstream's response headers to the client's,
// keeping everything the CLIs read (content-type, request-id, retry-after,
// x-should-retry, rate-limit headers, x-codex-turn-state…). Content-Length is kept:
// the body is relayed unchanged. Content-Encoding is kept too: if an upstream
// compresses although asked not to, the client gets the bytes and the label that
// explains them, never half-decoded data.
func copyResponseHeaders(dst, src http.Header) {
	for k, vv := range src {
		dst[k] = append([]string(nil), vv...)
	}
	removeHopByHop(dst)
	dst.Del("Set-Cookie") // a provider's session cookie is not the agent's concern
}

// relayBuf is the size of one upstream read. The upstream transport buffers
// far more than this, so a read rarely waits on the socket.
const relayBuf = 64 << 10

// maxBatch bounds the reads sent as one flush: the buffers a stream holds are
// at most maxBatch being written, relayQueue queued and one being read.
const (
	maxBatch   = 4
	relayQueue = 2
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, relayBuf); return &b }}

// chunk is one upstream read.
type chunk struct {
	buf *[]byte
	n   int
	err error
}

// relay copies body to w as it arrives, never parsing it on the way: the client
// receives the upstream's bytes exactly. One goroutine reads the upstream while
// this one writes to the client, and the client's side is flushed whenever the
// reader has nothing more in hand, which is the moment the upstream would make
// it wait: each SSE event of a paced stream leaves as soon as it was read, and
// pings keep the client's idle watchdogs fed, while a stream that arrives
// faster than it can be sent goes out in fewer, larger writes (the way
// httputil.ReverseProxy flushes when its read would block, without a timer).
//
// tap, when not nil, sees every chunk after the client has it; one with an
// undelivered method is told before it sees chunks whose write failed. stop must make a
// blocked body.Read return (it cancels the upstream request); relay calls it
// when the client has gone and returns only after the reader has ended.
// readErr is a failure of the upstream body, writeErr one of the client; both
// end the copy. cc, when not nil, sends a flush's writes as one.
func relay(w http.ResponseWriter, body io.Reader, stop func(), tap io.Writer, cc *coalescingConn) (n int64, readErr, writeErr error) {
	ch := make(chan chunk, relayQueue)
	go func() {
		defer close(ch)
		for {
			bp := bufPool.Get().(*[]byte)
			m, err := body.Read(*bp)
			ch <- chunk{bp, m, err}
			if err != nil {
				return
			}
		}
	}()
	rc := http.NewResponseController(w)
	var held [maxBatch]chunk
	batch := held[:0]
	// flush sends the batch and hands its buffers back: the coalescer refers to
	// them until release, and the tap reads them once they have gone out (or
	// failed to: the usage is what the upstream reported either way).
	flush := func() error {
		err := rc.Flush()
		if cc != nil {
			if rerr := cc.release(); err == nil {
				err = rerr
			}
		}
		if lt, ok := tap.(interface{ undelivered() }); ok && (err != nil || writeErr != nil) {
			lt.undelivered()
		}
		for _, c := range batch {
			if tap != nil {
				_, _ = tap.Write((*c.buf)[:c.n])
			}
			bufPool.Put(c.buf)
		}
		clear(held[:])
		batch = held[:0]
		return err
	}
	for c := range ch {
		if c.n > 0 && writeErr == nil {
			if cc != nil && len(batch) == 0 {
				cc.hold()
			}
			var wm int
			wm, writeErr = w.Write((*c.buf)[:c.n])
			n += int64(wm)
			batch = append(batch, c)
		} else {
			bufPool.Put(c.buf)
		}
		// The last chunk carries the error, so no batch outlives the loop.
		if len(batch) > 0 && (writeErr != nil || len(batch) == maxBatch || len(ch) == 0 || c.err != nil) {
			if ferr := flush(); writeErr == nil {
				writeErr = ferr
			}
		}
		if writeErr != nil {
			// The reader may be waiting on the upstream: stop it, then take
			// what it still sends until it closes ch.
			if stop != nil {
				stop()
				stop = nil
			}
			continue
		}
		if c.err != nil && c.err != io.EOF {
			readErr = c.err
		}
	}
	return n, readErr, writeErr
}

// flushHeaders sends the status line and headers right away, so a client sees the
// upstream's answer begin even before the first body byte.
func flushHeaders(w http.ResponseWriter) error {
	err := http.NewResponseController(w).Flush()
	if errors.Is(err, http.ErrNotSupported) {
		return nil
	}
	return err
}
