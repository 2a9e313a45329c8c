package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pvisor/pvisor/run/egress/nsrelay"
)

// NamespaceAddr is where a tool's init listens inside the tool's network
// namespace (its only interface is lo); the tools' HTTP_PROXY points here.
const NamespaceAddr = nsrelay.NamespaceAddr

// ProxyURL is the proxy as the tools' environment names it.
const ProxyURL = nsrelay.ProxyURL

// Options tune a Proxy; the zero value is usable.
type Options struct {
	// MaxConns bounds the connections open at once (default 256): more are
	// refused and journaled, not queued.
	MaxConns int
	// MaxJournal bounds the journal (default MaxJournal).
	MaxJournal int
	// DialTimeout bounds resolving and connecting (default 10 s).
	DialTimeout time.Duration
}

const (
	defaultMaxConns    = 256
	defaultDialTimeout = 10 * time.Second
	// maxHeader bounds a request's head (request line and headers): a
	// client that never ends its headers cannot make the proxy buffer.
	maxHeader = 64 << 10
	// headerTimeout bounds how long a client may take to send its head.
	headerTimeout = 30 * time.Second
)

// Proxy decides, forwards and journals connections. Safe for concurrent
// use; Close ends every connection.
type Proxy struct {
	policy Policy
	opts   Options
	j      *journal
	sem    chan struct{}

	mu     sync.Mutex
	call   Call
	closed bool
	conns  map[net.Conn]struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New starts nothing yet: connections arrive by Serve or by Attach.
func New(p Policy, opts Options) *Proxy {
	if opts.MaxConns <= 0 {
		opts.MaxConns = defaultMaxConns
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = defaultDialTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Proxy{policy: p, opts: opts, j: newJournal(opts.MaxJournal), sem: make(chan struct{}, opts.MaxConns),
		conns: map[net.Conn]struct{}{}, ctx: ctx, cancel: cancel}
}

// Policy is the policy the proxy applies.
func (p *Proxy) Policy() Policy { return p.policy }

// SetCall names the call that processes started from now on belong to.
func (p *Proxy) SetCall(c Call) {
	p.mu.Lock()
	p.call = c
	p.mu.Unlock()
}

// CurrentCall is the call SetCall last named.
func (p *Proxy) CurrentCall() Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.call
}

// Journal returns the kept entries, in the order the attempts were made.
func (p *Proxy) Journal() []Entry { return p.j.snapshot() }

// Summary totals every attempt, kept in the journal or not.
func (p *Proxy) Summary() Summary { return p.j.summary() }

// Close ends every connection and waits for their handlers; the journal
// stays readable.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
}

// ServeListener serves the connections of l, attributed to the current
// call, until l is closed. l must be a loopback listener: the proxy is
// never reachable from outside the machine.
func (p *Proxy) ServeListener(l net.Listener) error {
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok || !addr.IP.IsLoopback() {
		return fmt.Errorf("egress proxy: refusing to serve on %s: only a loopback address", l.Addr())
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		p.Serve(c, p.CurrentCall())
	}
}

// Serve handles one client connection in the background.
func (p *Proxy) Serve(c net.Conn, call Call) {
	if !p.register(c) {
		return
	}
	go func() {
		defer p.wg.Done()
		defer func() {
			p.mu.Lock()
			delete(p.conns, c)
			p.mu.Unlock()
			c.Close()
		}()
		select {
		case p.sem <- struct{}{}:
			defer func() { <-p.sem }()
			p.handle(c, call)
		default:
			start := time.Now()
			e := &Entry{Time: start, Call: callRef(call), Kind: "connect", Reason: "too-many-connections"}
			p.j.begin(e)
			p.j.finish(e, start)
		}
	}()
}

func callRef(c Call) *Call {
	if c == (Call{}) {
		return nil
	}
	return &c
}

// handle reads one request head and either tunnels (CONNECT) or forwards
// one plain HTTP request; the connection then ends, so a kept-alive
// client cannot send a second request past the policy.
func (p *Proxy) handle(c net.Conn, call Call) {
	start := time.Now()
	e := &Entry{Time: start, Call: callRef(call)}
	var up, down atomic.Int64
	defer func() {
		e.BytesUp, e.BytesDown = up.Load(), down.Load()
		p.j.finish(e, start)
	}()
	_ = c.SetReadDeadline(start.Add(headerTimeout))
	lr := &io.LimitedReader{R: c, N: maxHeader}
	br := bufio.NewReader(lr)
	req, err := http.ReadRequest(br)
	if err != nil {
		e.Kind, e.Reason, e.Error = "http", "bad-request", short(err)
		p.j.begin(e)
		respond(c, http.StatusBadRequest, "pvisor egress proxy: unreadable request")
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	host, port, kind, ok := target(req)
	e.Kind, e.Host, e.Port = kind, host, port
	if kind == "http" {
		e.Method = req.Method
	}
	if !ok {
		e.Reason = "bad-request"
		p.j.begin(e)
		respond(c, http.StatusBadRequest, "pvisor egress proxy: a proxy request needs an absolute http:// URL or CONNECT host:port")
		return
	}
	addr, d := p.decide(host, port)
	e.Allowed, e.Reason, e.Rule = d.allowed, d.reason, d.rule
	if addr.IsValid() {
		e.Address = addr.String()
	}
	p.j.begin(e)
	if !d.allowed {
		respond(c, http.StatusForbidden, fmt.Sprintf("pvisor egress proxy: %s:%d denied (%s) by --overlaynet-policy %s", host, port, d.reason, p.policy.Name))
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.opts.DialTimeout)
	var dialer net.Dialer
	upstream, err := dialer.DialContext(ctx, "tcp", addr.String())
	cancel()
	if err != nil {
		e.Error = "dial: " + short(err)
		respond(c, http.StatusBadGateway, "pvisor egress proxy: could not connect to "+addr.String())
		return
	}
	if !p.track(upstream) {
		return
	}
	defer p.untrack(upstream)
	lr.N = 1 << 62 // the head is read; bodies and tunnels are not bounded by it
	if kind == "connect" {
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		// Bytes the client sent after its head (a TLS hello) go first.
		if n := br.Buffered(); n > 0 {
			b, _ := br.Peek(n)
			w, err := upstream.Write(b)
			up.Add(int64(w))
			if err != nil {
				return
			}
		}
		pipe(c, upstream, lr, &up, &down)
		return
	}
	// Plain HTTP: one request in origin form, hop-by-hop and proxy headers
	// removed; the response is relayed until the upstream closes.
	for _, h := range []string{"Proxy-Authorization", "Proxy-Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		req.Header.Del(h)
	}
	req.Header.Set("Connection", "close")
	if _, ok := req.Header["User-Agent"]; !ok {
		// Empty stops Write from adding Go's own: the server sees the tool's request.
		req.Header.Set("User-Agent", "")
	}
	req.Close = true
	req.RequestURI = ""
	req.URL.Scheme, req.URL.Host = "", ""
	if err := req.Write(&countWriter{w: upstream, n: &up}); err != nil {
		e.Error = "upstream: " + short(err)
		return
	}
	n, _ := io.Copy(c, upstream)
	down.Add(n)
}

// register counts a connection and its handler, so that Close ends the one
// and waits for the other; false (c closed) once the proxy is closed. The
// count is taken under the lock Close takes first, so it never races
// Close's Wait.
func (p *Proxy) register(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	return true
}

// track registers a proxy-side connection so that Close ends it.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// pipe copies both ways until either side ends, then closes both.
func pipe(client, upstream net.Conn, fromClient io.Reader, up, down *atomic.Int64) {
	done := make(chan struct{}, 2)
	go func() {
		n, _ := io.Copy(upstream, fromClient)
		up.Add(n)
		if tc, ok := upstream.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		n, _ := io.Copy(client, upstream)
		down.Add(n)
		if tc, ok := client.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
}

type countWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// target is where a request wants to go: CONNECT host:port, or the host of
// an absolute http:// URL (an https:// URL must come as CONNECT).
func target(req *http.Request) (host string, port int, kind string, ok bool) {
	if req.Method == http.MethodConnect {
		h, p, err := net.SplitHostPort(req.RequestURI)
		if err != nil {
			return "", 0, "connect", false
		}
		host, port, ok = cleanTarget(h, p)
		return host, port, "connect", ok
	}
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
		return "", 0, "http", false
	}
	h, p := req.URL.Hostname(), req.URL.Port()
	if p == "" {
		p = "80"
	}
	host, port, ok = cleanTarget(h, p)
	return host, port, "http", ok
}

func cleanTarget(h, p string) (string, int, bool) {
	port, err := parsePort(p)
	if err != nil {
		return "", 0, false
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Unmap().String(), port, true
	}
	h = normalizeHost(h)
	if !validHostName(h) {
		return "", 0, false
	}
	return h, port, true
}

type decision struct {
	allowed bool
	reason  string
	rule    string
}

// decide applies the policy to host:port and picks the address to dial.
// Names are resolved here, once, and the address checked is the address
// dialed: a name cannot resolve to something else between the two.
func (p *Proxy) decide(host string, port int) (netip.AddrPort, decision) {
	if p.policy.Name == PolicyDeny {
		return netip.AddrPort{}, decision{reason: "policy-deny"}
	}
	var nameRule string
	hasAddrRules := false
	if p.policy.Name == PolicyAllowlist {
		for _, pat := range p.policy.Allow {
			if pat.Prefix.IsValid() {
				hasAddrRules = true
			} else if nameRule == "" && pat.matchName(host, port) {
				nameRule = pat.Text
			}
		}
		// IP and CIDR entries match IP literals only: resolving names no
		// entry covers would let a tool send anything out as DNS queries.
		_, literalErr := netip.ParseAddr(host)
		if nameRule == "" && (!hasAddrRules || literalErr != nil) {
			return netip.AddrPort{}, decision{reason: "not-allowlisted"}
		}
	}
	addrs, err := p.resolve(host)
	if err != nil || len(addrs) == 0 {
		return netip.AddrPort{}, decision{reason: "unresolvable"}
	}
	private := false
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, uint16(port))
		if p.policy.Name == PolicyAllowlist {
			// An IP or CIDR entry is an explicit grant, private or not.
			for _, pat := range p.policy.Allow {
				if pat.matchAddr(a, port) {
					return ap, decision{allowed: true, reason: "allowlist", rule: pat.Text}
				}
			}
			if nameRule == "" {
				continue
			}
		}
		if !isPublicAddr(a) {
			private = true
			continue
		}
		if p.policy.Name == PolicyAllowlist {
			return ap, decision{allowed: true, reason: "allowlist", rule: nameRule}
		}
		return ap, decision{allowed: true, reason: "public"}
	}
	if private && (p.policy.Name == PolicyPublic || nameRule != "") {
		return netip.AddrPortFrom(addrs[0], uint16(port)), decision{reason: "private-address"}
	}
	return netip.AddrPort{}, decision{reason: "not-allowlisted"}
}

func (p *Proxy) resolve(host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip.Unmap()}, nil
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.opts.DialTimeout)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	for i := range addrs {
		addrs[i] = addrs[i].Unmap()
	}
	return addrs, err
}

// respond writes a short error response; its text names no header or body
// of the request.
func respond(c net.Conn, code int, msg string) {
	body := msg + "\n"
	_, _ = io.WriteString(c, "HTTP/1.1 "+strconv.Itoa(code)+" "+http.StatusText(code)+"\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
}

// short is an error's text, bounded, on one line.
func short(err error) string {
	var ne *net.OpError
	if errors.As(err, &ne) && ne.Err != nil {
		err = ne.Err
	}
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
