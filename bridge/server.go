package bridge

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultMaxBodyBytes caps request bodies: the Anthropic API's own limit.
const DefaultMaxBodyBytes = 32 << 20

// Options configures a Server.
type Options struct {
	// Upstream receives the checked requests. Required.
	Upstream Upstream
	// Conversation checks and rewrites every model request. Required; use
	// Passthrough to forward unchanged.
	Conversation Conversation
	// MaxBodyBytes caps a request body, before and after decompression;
	// DefaultMaxBodyBytes when zero.
	MaxBodyBytes int64
	// Logger receives one line per request (method, path, status, outcome, sizes,
	// digests) and never a body, a header value or a credential. Nil discards.
	Logger *slog.Logger
	// OnRefusal is called once, on the first refusal, from the request's goroutine
	// after the client has its answer. Refused offers the same as a channel.
	OnRefusal func(*Refusal)
	// Models are the ids GET /v1/models lists; the list is empty when nil.
	Models []string
}

// Server is a running bridge. It serves exactly one replay: one token, one
// conversation, one upstream.
type Server struct {
	opts    Options
	token   []byte
	addr    string // 127.0.0.1:PORT
	allowed [2]string
	srv     *http.Server
	log     *slog.Logger
	done    chan struct{} // closed when Serve returns
	serr    error

	// inflight counts running handlers so Close can wait for their records;
	// closing (under journal.mu) stops new ones from joining once Close waits.
	inflight sync.WaitGroup
	closing  bool

	journal

	refuseOnce sync.Once
	refusedCh  chan struct{}
	refusal    *Refusal // set once, before refusedCh closes
}

// Start listens on 127.0.0.1 on a free port and serves until Close. Only the IPv4
// loopback literal is ever bound: not localhost (which may resolve elsewhere), not
// a wildcard.
func Start(opts Options) (*Server, error) {
	if opts.Upstream == nil {
		return nil, errors.New("bridge: no upstream configured")
	}
	if opts.Conversation == nil {
		return nil, errors.New("bridge: no conversation checker configured; use bridge.Passthrough to forward requests unchanged")
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tok := make([]byte, 32)
	if _, err := rand.Read(tok); err != nil {
		return nil, fmt.Errorf("bridge: make run token: %w", err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bridge: listen on 127.0.0.1: %w (is the loopback interface up in this namespace?)", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	s := &Server{
		opts:      opts,
		token:     []byte("pvisor-bridge-" + hex.EncodeToString(tok)),
		addr:      ln.Addr().String(),
		allowed:   [2]string{"127.0.0.1:" + strconv.Itoa(port), "localhost:" + strconv.Itoa(port)},
		log:       log,
		done:      make(chan struct{}),
		refusedCh: make(chan struct{}),
	}
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		// No WriteTimeout: it would cut long streams. No ReadTimeout either; bodies
		// are capped and the client is local.
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ConnContext: withConn,
	}
	go func() {
		err := s.srv.Serve(coalescingListener{ln})
		if !errors.Is(err, http.ErrServerClosed) {
			s.serr = err
		}
		close(s.done)
	}()
	return s, nil
}

// URL is the base URL for the agent: http://127.0.0.1:PORT. Claude Code takes it
// as is (ANTHROPIC_BASE_URL); OpenAI-style clients want URL()+"/v1".
func (s *Server) URL() string { return "http://" + s.addr }

// Addr is 127.0.0.1:PORT.
func (s *Server) Addr() string { return s.addr }

// Token is the per-run credential the agent must present as x-api-key or
// Authorization: Bearer. Hand it over through the environment or a 0600 file,
// never argv (which /proc shows to every process).
func (s *Server) Token() string { return string(s.token) }

// Refused is closed on the first refusal; the engine selects on it to stop the
// agent.
func (s *Server) Refused() <-chan struct{} { return s.refusedCh }

// Refusal returns the first refusal, or nil.
func (s *Server) Refusal() *Refusal {
	select {
	case <-s.refusedCh:
		return s.refusal
	default:
		return nil
	}
}

// Records returns a copy of the request log, in completion order. A request is
// logged when its handler returns, which can be just after the client has read the
// whole answer; after Close the log is complete.
func (s *Server) Records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Record(nil), s.records...)
}

// Stats returns the counters, complete after Close (see Records).
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	if st.LastFailure != nil {
		f := *st.LastFailure
		st.LastFailure = &f
	}
	if st.Usage != nil {
		u := *st.Usage
		st.Usage = &u
	}
	return st
}

// Close stops the listener, ends every request in flight (their upstream requests
// are cancelled with them) and waits until each has been recorded. It is safe to
// call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	err := s.srv.Close()
	s.inflight.Wait()
	<-s.done
	if err == nil {
		err = s.serr
	}
	return err
}

// exchange is one request's bookkeeping, filled in as it progresses and recorded
// when the handler ends, even when it ends by aborting the connection.
type exchange struct {
	rec       Record
	validated bool
	fail      *UpstreamFailure
	// The body digests, hashed while the check and the upstream work: a
	// request of a few hundred KiB takes most of a millisecond to hash on a
	// CPU without SHA instructions, time the agent would wait for its first byte.
	reqSum, fwdSum func() string
}

// ServeHTTP checks, in order: Host (DNS rebinding), browser origin, the token, the
// route, the body; then asks the Conversation and relays the upstream's answer.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		// Close has cut this connection already; nobody will read an answer.
		return
	}
	defer s.inflight.Done()
	start := time.Now()
	ex := &exchange{rec: Record{Start: start, Method: trimPath(r.Method), Path: trimPath(r.URL.Path)}}
	rec := &ex.rec
	proto := protocolForPath(r.URL.Path)
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		rec.Status = sw.status
		if rec.Status == 0 {
			rec.Status = http.StatusOK
		}
		rec.DurationMS = time.Since(start).Milliseconds()
		if ex.reqSum != nil {
			rec.RequestSHA256 = ex.reqSum()
		}
		if ex.fwdSum != nil {
			rec.ForwardSHA256 = ex.fwdSum()
		}
		s.add(*rec, ex.validated, ex.fail)
		s.logRecord(*rec)
	}()
	reject := func(outcome Outcome, status int, kind errorKind, msg string) {
		rec.Outcome, rec.Message = outcome, msg
		writeError(sw, proto, status, kind, msg, false)
	}

	if !s.hostAllowed(r.Host) {
		// The Host is not echoed: it is attacker-chosen text headed for a log.
		reject(OutcomeRejected, http.StatusMisdirectedRequest, errPermission,
			"this bridge only answers requests addressed to "+s.allowed[0]+" or "+s.allowed[1])
		return
	}
	// Any Origin header, even an empty one, marks a browser-made request.
	if _, origin := r.Header["Origin"]; origin || !sameSite(r.Header.Get("Sec-Fetch-Site")) {
		reject(OutcomeRejected, http.StatusForbidden, errPermission, "browser requests are not served")
		return
	}
	if !s.authorized(r.Header) {
		reject(OutcomeUnauthorized, http.StatusUnauthorized, errAuth,
			"missing or wrong API key; present the per-run bridge token as x-api-key or Authorization: Bearer")
		return
	}
	if r.Method == http.MethodHead && r.URL.Path == "/" {
		// Claude Code's connectivity probe; like everything else, it needs
		// the token, so nothing on the machine learns the bridge is here.
		rec.Outcome = OutcomeLocal
		sw.WriteHeader(http.StatusOK)
		return
	}
	if r.URL.Path == "/v1/models" && r.Method == http.MethodGet {
		rec.Outcome = OutcomeLocal
		s.writeModels(sw)
		return
	}
	rt, ok := findRoute(r.URL.Path)
	if !ok {
		reject(OutcomeRejected, http.StatusNotFound, errNotFound, "no route for "+r.Method+" "+trimPath(r.URL.Path))
		return
	}
	rec.Protocol, rec.Route = rt.proto, rt.name
	if r.Method != http.MethodPost {
		sw.Header().Set("Allow", http.MethodPost)
		reject(OutcomeRejected, http.StatusMethodNotAllowed, errNotFound, rt.path+" takes POST only")
		return
	}
	body, rej := s.readBody(sw, r)
	if rej != nil {
		reject(OutcomeRejected, rej.status, rej.kind, rej.msg)
		return
	}
	rec.RequestBytes, ex.reqSum = len(body), digestLater(body)

	req := &Request{Seq: s.nextSeq(), Protocol: rt.proto, Route: rt.name, Path: r.URL.RequestURI(),
		Header: r.Header.Clone(), Body: body}
	rec.Seq = req.Seq
	stripRequestHeaders(req.Header)
	forward, ref := s.check(r.Context(), req)
	if ref == errCanceled {
		rec.Outcome = OutcomeCanceled
		return
	}
	if ref != nil {
		rec.Outcome, rec.Message = OutcomeRefused, ref.Reason
		writeError(sw, rt.proto, ref.status(), errInvalid, ref.Reason, false)
		s.refused(ref)
		return
	}
	ex.validated = true
	req.Body = forward
	rec.ForwardBytes, ex.fwdSum = len(forward), ex.reqSum
	if !bytes.Equal(forward, body) {
		ex.fwdSum = digestLater(forward)
	}
	if abort := s.forward(r.Context(), sw, req, ex); abort {
		// The status is already sent; the only honest signal left is to break the
		// connection so the client sees a truncated stream, not a finished one.
		panic(http.ErrAbortHandler)
	}
}

func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.inflight.Add(1)
	return true
}

// errCanceled is check's answer when the client left while the Conversation was
// deciding: that is no verdict on the request, so the run is not refused for it.
var errCanceled = &Refusal{Reason: "client went away"}

// check runs the Conversation unless the run was already refused, and turns any
// error, or a panic, into a Refusal: a broken checker must fail closed.
func (s *Server) check(ctx context.Context, req *Request) (forward []byte, ref *Refusal) {
	sticky := func() *Refusal {
		if first := s.Refusal(); first != nil {
			return &Refusal{Status: first.status(), Reason: "an earlier request of this run was refused: " + first.Reason}
		}
		return nil
	}
	if ref := sticky(); ref != nil {
		return nil, ref
	}
	if !s.opts.Upstream.Accepts(req.Protocol) {
		return nil, Refuse("the agent speaks %s but the upstream does not; choose the upstream for this agent's protocol", req.Protocol)
	}
	defer func() {
		if v := recover(); v != nil {
			// The panic value may quote the request; only the stack is logged.
			s.log.Error("bridge: the conversation check panicked", "seq", req.Seq, "stack", string(debug.Stack()))
			forward, ref = nil, Refuse("internal error in pvisor's conversation check (a bug; see the bridge log)")
		}
	}()
	forward, err := s.opts.Conversation.Check(ctx, req)
	var asRefusal *Refusal
	switch {
	case errors.As(err, &asRefusal):
		return nil, asRefusal
	case err != nil && ctx.Err() != nil:
		return nil, errCanceled
	case err != nil:
		return nil, &Refusal{Reason: err.Error()}
	case forward == nil:
		return nil, Refuse("the conversation check returned no body to forward")
	}
	// Another request may have been refused while this one was checked; the run
	// is over then, and nothing more goes upstream.
	if ref := sticky(); ref != nil {
		return nil, ref
	}
	return forward, nil
}

func (s *Server) refused(r *Refusal) {
	s.refuseOnce.Do(func() {
		s.refusal = r
		close(s.refusedCh)
		s.log.Warn("bridge refused a request; the run cannot continue", "reason", r.Reason)
		if s.opts.OnRefusal != nil {
			s.opts.OnRefusal(r)
		}
	})
}

// forward sends req upstream and relays the answer. abort reports a stream that
// broke off after the status was sent.
func (s *Server) forward(ctx context.Context, w *statusWriter, req *Request, ex *exchange) (abort bool) {
	rec := &ex.rec
	upstreamFail := func(status int, msg string, retry bool) {
		rec.Outcome, rec.Message = OutcomeUpstreamFail, msg
		writeError(w, req.Protocol, status, errUpstream, msg, retry)
		ex.fail = &UpstreamFailure{Kind: FailureConnection, Status: status, Seq: req.Seq, Message: msg}
	}
	// The upstream request has its own cancel so that relay can stop its reader
	// when the client has gone; ctx still tells a client's cancellation apart.
	upCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	res, err := s.opts.Upstream.Send(upCtx, req)
	if err != nil {
		if ctx.Err() != nil {
			rec.Outcome = OutcomeCanceled
			return false
		}
		if t := timeoutOf(err); t != "" {
			// 504: the service was reached and did not answer in time.
			upstreamFail(http.StatusGatewayTimeout, "model upstream timed out: "+err.Error(), true)
			ex.fail.Timeout = t
			return false
		}
		upstreamFail(http.StatusBadGateway, "model upstream unreachable: "+err.Error(), true)
		return false
	}
	defer res.Body.Close()
	rec.UpstreamRequestID = firstOf(res.Header, "Request-Id", "X-Request-Id")
	if res.StatusCode >= 300 && res.StatusCode < 400 {
		// Following a redirect would let the agent talk to the model past the
		// bridge; passing it on would tell the agent to do exactly that.
		upstreamFail(http.StatusBadGateway, fmt.Sprintf(
			"model upstream answered %d (redirect); point the upstream base URL at the final address", res.StatusCode), false)
		return false
	}
	if k := classify(res.StatusCode); k != "" {
		ex.fail = &UpstreamFailure{Kind: k, Status: res.StatusCode, Seq: req.Seq}
	}
	copyResponseHeaders(w.Header(), res.Header)
	w.WriteHeader(res.StatusCode)
	var readErr error
	var usage *usageTap
	writeErr := flushHeaders(w)
	if writeErr == nil {
		var tap io.Writer
		if res.StatusCode < 300 {
			usage = &usageTap{}
			tap = usage
		}
		stop := func() {
			cancel()
			_ = res.Body.Close()
		}
		rec.ResponseBytes, readErr, writeErr = relay(w, res.Body, stop, tap, connOf(ctx))
		if usage != nil {
			rec.Usage = usage.result()
		}
	}
	switch {
	case usage != nil && usage.ended && ex.fail == nil:
		// The stream's last event reached the client: what failed after it
		// (the client closing at once, the upstream's end arriving late) cost
		// the client nothing.
		rec.Outcome = OutcomeForwarded
	case writeErr != nil || (readErr != nil && ctx.Err() != nil):
		rec.Outcome = OutcomeCanceled
	case readErr != nil:
		rec.Outcome = OutcomeUpstreamFail
		rec.Message = "model upstream stream broke off: " + readErr.Error()
		ex.fail = &UpstreamFailure{Kind: FailureConnection, Status: res.StatusCode, Seq: req.Seq, Message: rec.Message,
			Timeout: timeoutOf(readErr)}
		return true
	case ex.fail != nil:
		rec.Outcome = OutcomeUpstreamFail
	default:
		rec.Outcome = OutcomeForwarded
	}
	return false
}

// rejection is a request answered with an error before it became a Request.
type rejection struct {
	status int
	kind   errorKind
	msg    string
}

// readBody reads the capped body and removes a gzip Content-Encoding.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *rejection) {
	limit := s.opts.MaxBodyBytes
	tooLarge := &rejection{http.StatusRequestEntityTooLarge, errTooLarge, fmt.Sprintf("request body over %d bytes", limit)}
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	var rd io.Reader = http.MaxBytesReader(w, r.Body, limit)
	// A body of announced length is read into one allocation (plus room for the
	// read that sees its end), not through ReadAll's doublings and copies: an
	// agent's request is hundreds of KiB, and the agent waits for it.
	size := int64(bytes.MinRead)
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		size += max(r.ContentLength, 0)
	case "gzip":
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return nil, &rejection{http.StatusBadRequest, errInvalid, "gzip request body: " + err.Error()}
		}
		defer zr.Close()
		// One byte more than allowed tells a full body from an oversized one.
		rd = io.LimitReader(zr, limit+1)
	default:
		return nil, &rejection{http.StatusUnsupportedMediaType, errUnsupported, fmt.Sprintf(
			"request Content-Encoding %q is not supported; turn request compression off in the agent "+
				"(Codex: -c features.enable_request_compression=false)", trimPath(enc))}
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	_, err := buf.ReadFrom(rd)
	body := buf.Bytes()
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe) || int64(len(body)) > limit:
		return nil, tooLarge
	case err != nil:
		return nil, &rejection{http.StatusBadRequest, errInvalid, "read request body: " + err.Error()}
	}
	return body, nil
}

func (s *Server) hostAllowed(host string) bool {
	return host == s.allowed[0] || strings.EqualFold(host, s.allowed[1])
}

// authorized accepts the token from x-api-key or Authorization: Bearer. Every
// credential presented must be the token (Claude Code may send both), and the
// comparison takes the same time wherever a wrong token differs.
func (s *Server) authorized(h http.Header) bool {
	var creds [][]byte
	for _, v := range h.Values("X-Api-Key") {
		creds = append(creds, []byte(v))
	}
	for _, v := range h.Values("Authorization") {
		scheme, tok, ok := strings.Cut(v, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return false
		}
		creds = append(creds, []byte(strings.TrimSpace(tok)))
	}
	if len(creds) == 0 {
		return false
	}
	for _, c := range creds {
		if subtle.ConstantTimeCompare(c, s.token) != 1 {
			return false
		}
	}
	return true
}

// sameSite accepts the absent header (non-browser clients) and requests a browser
// made on its own or from the same origin.
func sameSite(v string) bool { return v == "" || v == "none" || v == "same-origin" }

// trimPath bounds client-chosen text before it reaches a message or a log.
func trimPath(p string) string {
	const max = 200
	if len(p) > max {
		return p[:max] + "…"
	}
	return p
}

func firstOf(h http.Header, names ...string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return trimPath(v)
		}
	}
	return ""
}

// statusWriter remembers the status for the record.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's Flush.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
