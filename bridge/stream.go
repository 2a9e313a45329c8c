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

var bufPool = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

// relay copies body to w as it arrives, flushing after every write, so each SSE
// event leaves as soon as the upstream produced it and pings keep the client's idle
// watchdogs fed. It never parses the stream: the client receives the upstream's
// bytes exactly. readErr is a failure of the upstream body, writeErr one of the
// client; both end the copy. cc, when not nil, sends each read's writes as one.
func relay(w http.ResponseWriter, body io.Reader, cc *coalescingConn) (n int64, readErr, writeErr error) {
	rc := http.NewResponseController(w)
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		m, err := body.Read(buf)
		if m > 0 {
			if cc != nil {
				cc.hold()
			}
			wm, werr := w.Write(buf[:m])
			n += int64(wm)
			if werr == nil {
				werr = rc.Flush()
			}
			if cc != nil {
				if rerr := cc.release(); werr == nil {
					werr = rerr
				}
			}
			if werr != nil {
				return n, nil, werr
			}
		}
		if err == io.EOF {
			return n, nil, nil
		}
		if err != nil {
			return n, err, nil
		}
	}
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
