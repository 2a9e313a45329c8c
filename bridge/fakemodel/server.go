// Package fakemodel is a scripted stand-in for an LLM provider. It speaks the three
// wire protocols the supported agents use — Anthropic Messages, OpenAI Responses and
// OpenAI Chat Completions, streaming (SSE) and not — and answers from a Script, so the
// real agent CLIs can run end to end on loopback with no model service. Every request
// is recorded so tests can assert on exactly what an agent sent.
//
// A script file is JSON (example: testdata/example-script.json):
//
//	{"replies": [
//	   {"thinking": "…", "text": "…", "tool_calls": [
//	      {"name": "Bash", "arguments": {"command": "ls"}},            parallel calls:
//	      {"name": "Read", "arguments": {"file_path": "{CWD}/a.txt"}}  several per reply
//	   ]},
//	   {"tool_calls": [{"type": "custom", "name": "apply_patch", "input": "*** Begin Patch…"}]},
//	   {"text": "Done."}],
//	 "final": "text once the replies run out", "side": "text for tool-less calls",
//	 "models": ["ids for GET /v1/models"]}
//
// Which reply answers a request is decided by its conversation: the first main
// request fixes the base (the assistant turns it already holds, so a resumed session
// gets the script from its start), and reply i answers a conversation holding base+i
// turns (WithReplyOffset(n) fixes the base at n instead). Retries and concurrent
// requests therefore get consistent answers. Ids are unique per server (a random
// seed, or WithIDSeed's), and tool call ids depend only on the seed and (reply, call)
// so they match across retries; a second server never repeats the ids a first one
// wrote into a session. A main request past the end of the replies is answered with
// the final text and logged with script_exhausted. A request without tools (title,
// quota or summary calls) is a side call and never takes a reply, unless the script
// is for an agent that parses actions from text ("text_actions"). Custom (freeform)
// calls exist only in the Responses API; serving one over another protocol is a 400.
package fakemodel

import (
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// Protocol names a wire protocol, as recorded in Request.Protocol.
type Protocol string

const (
	Anthropic Protocol = "anthropic-messages"
	Responses Protocol = "openai-responses"
	Chat      Protocol = "chat-completions"
)

// Kinds of requests, as recorded in Request.Kind.
const (
	KindMain        = "main"         // served Script.Replies[Reply]
	KindFinal       = "final"        // main request past the end of the script
	KindSide        = "side"         // no tools: title, quota or summary call
	KindCountTokens = "count_tokens" // POST /v1/messages/count_tokens
	KindModels      = "models"       // GET /v1/models
	KindProbe       = "probe"        // HEAD / and GET / connectivity checks
	KindUnknown     = "unknown"      // 404
	KindInvalid     = "invalid"      // unreadable body or a reply the protocol cannot carry
)

// Request is one recorded request. Credentials are never recorded.
type Request struct {
	Seq      int                 `json:"seq"`
	Time     time.Time           `json:"time"`
	Method   string              `json:"method"`
	Path     string              `json:"path"` // with the query, e.g. /v1/messages?beta=true
	Header   map[string][]string `json:"header"`
	Body     json.RawMessage     `json:"body,omitempty"`      // when the body is JSON
	BodyText string              `json:"body_text,omitempty"` // when it is not
	Protocol Protocol            `json:"protocol,omitempty"`
	Kind     string              `json:"kind"`
	Stream   bool                `json:"stream,omitempty"`
	// Turn is how many assistant turns the request's conversation already held.
	Turn int `json:"turn"`
	// Reply is the script index served, -1 for anything else.
	Reply int `json:"reply"`
	// ScriptExhausted: a main request past the last reply, answered with the
	// final text.
	ScriptExhausted bool `json:"script_exhausted,omitempty"`
	Status          int  `json:"status"`
	// Error says why the answer could not be written completely.
	Error string `json:"error,omitempty"`
}

// Server is an http.Handler; it is safe for concurrent requests.
type Server struct {
	script    Script
	now       func() time.Time
	offset    int    // assistant turns before reply 0
	offsetSet bool   // offset is fixed (WithReplyOffset), else the first main request's
	seed      string // mixed into generated ids
	lean      bool   // record requests without their bodies

	mu   sync.Mutex
	seq  int
	reqs []Request
	log  io.Writer
	lerr error
	warn io.Writer
}

// Option configures a Server.
type Option func(*Server)

// WithClock fixes the clock used for created timestamps (golden tests).
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// WithReplyOffset makes reply i answer a conversation that already holds n+i
// assistant turns, whatever the first request holds (without it, the first
// main request's turns are n). WithReplyOffset(0) numbers replies by every
// assistant turn in the conversation, history included: a script of a
// whole recorded session then answers a continuation from its middle with
// the recorded next reply. A main request with fewer than n turns is
// answered 400.
func WithReplyOffset(n int) Option { return func(s *Server) { s.offset, s.offsetSet = n, true } }

// WithIDSeed mixes seed into every id the server generates (items, calls,
// responses) instead of the random seed each server has; "" gives the plain
// deterministic ids (golden tests).
func WithIDSeed(seed string) Option { return func(s *Server) { s.seed = seed } }

// WithoutBodies records requests without their bodies, for long-lived servers
// whose callers only need the kinds and replies served (bodies hold the whole
// conversation each time).
func WithoutBodies() Option { return func(s *Server) { s.lean = true } }

// WithLog also writes every answered request as one JSON line to w (in completion
// order; Seq gives the arrival order).
func WithLog(w io.Writer) Option { return func(s *Server) { s.log = w } }

// WithWarnings writes a line to w for every main request past the end of
// the script (answered with the final text), so a script too short for the
// session it serves is seen at once.
func WithWarnings(w io.Writer) Option { return func(s *Server) { s.warn = w } }

// New returns a server answering from script. The script should have passed
// Validate; a malformed call is still answered, with a provider-shaped error.
func New(script Script, opts ...Option) *Server {
	s := &Server{script: script, now: time.Now, seed: randomSeed()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Requests returns a copy of every request answered so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	out := append([]Request(nil), s.reqs...)
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

// LogErr reports the first failure to write the JSONL log, if any.
func (s *Server) LogErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lerr
}

// ListenAndServe serves the script at scriptPath on addr (use 127.0.0.1:PORT; port 0
// picks one) and appends the request log to logPath unless it is empty. "{CWD}" in
// the script becomes the current directory, so a recorded script replays from the
// repository it is started in. It prints the base URL on stderr and returns only on
// failure.
func ListenAndServe(addr, scriptPath, logPath string) error {
	script, err := LoadScript(scriptPath)
	if err != nil {
		return err
	}
	if wd, err := os.Getwd(); err == nil {
		script = script.Expand(map[string]string{"CWD": wd})
	}
	opts := []Option{WithWarnings(os.Stderr)}
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("open fake-model request log: %w", err)
		}
		defer f.Close()
		opts = append(opts, WithLog(f))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("fake model: listen on %s: %w", addr, err)
	}
	fmt.Fprintf(os.Stderr, "fake model: serving %d replies on http://%s\n", len(script.Replies), ln.Addr())
	srv := &http.Server{Handler: New(script, opts...), ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}

const maxBody = 64 << 20

// ServeHTTP routes the provider endpoints; "/v1" is optional so base URLs with or
// without it both work.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := Request{Method: r.Method, Path: r.URL.RequestURI(), Header: redact(r.Header), Reply: -1, Kind: KindUnknown}
	s.mu.Lock()
	rec.Seq, rec.Time = s.seq, s.now().UTC()
	s.seq++
	s.mu.Unlock()
	sw := &statusWriter{ResponseWriter: w}
	defer func() { s.record(rec, sw.status) }()

	body, err := readBody(r)
	if err != nil {
		rec.Kind = KindInvalid
		status := http.StatusUnsupportedMediaType
		if errors.Is(err, errTooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		openAIError(sw, status, err.Error())
		return
	}
	switch {
	case s.lean:
	case json.Valid(body):
		rec.Body = body
	case len(body) > 0:
		rec.BodyText = string(body)
	}

	route := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case route == "/" || route == "" || route == "/api/hello":
		rec.Kind = KindProbe
		sw.WriteHeader(http.StatusOK)
	case route == "/models" && r.Method == http.MethodGet:
		rec.Kind = KindModels
		writeJSON(sw, http.StatusOK, s.models())
	case route == "/messages/count_tokens" && r.Method == http.MethodPost:
		rec.Kind, rec.Protocol = KindCountTokens, Anthropic
		writeJSON(sw, http.StatusOK, obj{{"input_tokens", estimateTokens(len(body))}})
	case route == "/messages" && r.Method == http.MethodPost:
		s.answer(sw, &rec, Anthropic, body)
	case route == "/responses" && r.Method == http.MethodPost:
		s.answer(sw, &rec, Responses, body)
	case route == "/chat/completions" && r.Method == http.MethodPost:
		s.answer(sw, &rec, Chat, body)
	default:
		openAIError(sw, http.StatusNotFound, fmt.Sprintf("fake model: no route for %s %s", r.Method, r.URL.Path))
	}
}

// turn is everything a renderer needs to write one response.
type turn struct {
	proto        Protocol
	kind         string
	index        int    // script index, -1 for side and final replies
	seed         string // Server.seed
	reply        Reply
	model        string
	seq          int
	inputTokens  int
	created      int64
	encrypted    bool // Responses: include reasoning.encrypted_content
	includeUsage bool // Chat: stream_options.include_usage
}

func (s *Server) answer(w http.ResponseWriter, rec *Request, p Protocol, body []byte) {
	rec.Protocol = p
	if !json.Valid(body) || !gjson.ParseBytes(body).IsObject() {
		rec.Kind = KindInvalid
		providerError(w, p, http.StatusBadRequest, "fake model: request body is not a JSON object")
		return
	}
	req := gjson.ParseBytes(body)
	t := turn{
		proto:        p,
		seed:         s.seed,
		model:        req.Get("model").String(),
		inputTokens:  estimateTokens(len(body)),
		created:      s.now().Unix(),
		encrypted:    includes(req.Get("include"), "reasoning.encrypted_content"),
		includeUsage: req.Get("stream_options.include_usage").Bool(),
	}
	if t.model == "" {
		t.model = "fake-model"
	}
	rec.Stream = req.Get("stream").Bool()
	rec.Turn = assistantTurns(p, req)
	t.index = -1
	side := len(req.Get("tools").Array()) == 0 && !s.script.TextActions
	reply := rec.Turn - s.base(rec.Turn, side)
	switch {
	case side:
		t.kind = KindSide
		t.reply = Reply{Text: s.sideText(p, req)}
	case reply < 0:
		rec.Kind = KindInvalid
		providerError(w, p, http.StatusBadRequest, fmt.Sprintf(
			"fake model: the conversation holds %d assistant turns, fewer than the %d the script starts after", rec.Turn, s.offset))
		return
	case reply < len(s.script.Replies):
		t.kind, t.index = KindMain, reply
		t.reply = s.script.Replies[reply]
	default:
		t.kind = KindFinal
		t.reply = Reply{Text: or(s.script.Final, defaultFinal)}
		rec.ScriptExhausted = true
	}
	rec.Kind, rec.Reply = t.kind, t.index
	if p != Responses {
		for _, c := range t.reply.ToolCalls {
			if c.custom() {
				rec.Kind = KindInvalid
				providerError(w, p, http.StatusBadRequest, fmt.Sprintf(
					"fake model: reply %d calls custom tool %q, which only the Responses API carries; "+
						"script it as a function call with arguments", t.index, c.Name))
				return
			}
		}
	}
	t.seq = rec.Seq
	var err error
	switch p {
	case Anthropic:
		w.Header().Set("request-id", t.id("req_fake", t.seq))
		err = writeAnthropic(w, t, rec.Stream)
	case Responses:
		w.Header().Set("x-request-id", t.id("req_fake", t.seq))
		err = writeResponses(w, t, rec.Stream)
	case Chat:
		w.Header().Set("x-request-id", t.id("req_fake", t.seq))
		err = writeChat(w, t, rec.Stream)
	}
	if err != nil {
		// The client went away mid-answer; keep that visible in the log.
		rec.Error = err.Error()
	}
}

// base is the assistant turns before reply 0: the offset, fixed by
// WithReplyOffset or else by the first main request (turns, unless side).
func (s *Server) base(turns int, side bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.offsetSet && !side {
		s.offset, s.offsetSet = turns, true
	}
	return s.offset
}

// randomSeed is a server's own id seed, so two servers never make the same
// ids.
func randomSeed() string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return time.Now().Format("150405.000000000")
	}
	return hex.EncodeToString(b)
}

// id is fakeID with the server's seed, when it has one, in front of parts.
func (t turn) id(prefix string, parts ...any) string {
	if t.seed != "" {
		parts = append([]any{t.seed}, parts...)
	}
	return fakeID(prefix, parts...)
}

// AssistantTurns counts the model responses already in a request body's
// conversation, the way the server picks a reply (see Script). p is the
// body's protocol.
func AssistantTurns(p Protocol, body []byte) int {
	return assistantTurns(p, gjson.ParseBytes(body))
}

// assistantTurns counts the model responses already in the conversation. Chat and
// Anthropic requests hold one assistant message per response. A Responses input
// holds items; one response is a run of model-made items (reasoning, message,
// *_call) that ends at the first user message or *_output item.
func assistantTurns(p Protocol, req gjson.Result) int {
	n := 0
	if p != Responses {
		req.Get("messages").ForEach(func(_, m gjson.Result) bool {
			if m.Get("role").String() == "assistant" {
				n++
			}
			return true
		})
		return n
	}
	inRun := false
	req.Get("input").ForEach(func(_, it gjson.Result) bool {
		typ, role := it.Get("type").String(), it.Get("role").String()
		switch {
		case (typ == "message" || typ == "") && role == "assistant",
			typ == "reasoning", strings.HasSuffix(typ, "_call"):
			if !inRun {
				n++
				inRun = true
			}
		case typ == "message" || typ == "" || strings.HasSuffix(typ, "_output"):
			inRun = false
		}
		return true
	})
	return n
}

// sideText answers a tool-less request. Clients that ask for structured output
// (Claude Code's and OpenCode's title calls) get a JSON object that fits the schema.
func (s *Server) sideText(p Protocol, req gjson.Result) string {
	var schema gjson.Result
	switch p {
	case Anthropic:
		schema = req.Get("output_config.format.schema")
	case Responses:
		schema = req.Get("text.format.schema")
	case Chat:
		schema = req.Get("response_format.json_schema.schema")
	}
	text := or(s.script.Side, defaultSide)
	if !schema.IsObject() {
		return text
	}
	var o obj
	schema.Get("properties").ForEach(func(k, v gjson.Result) bool {
		var val any
		switch v.Get("type").String() {
		case "string":
			val = text
		case "boolean":
			val = false
		case "integer", "number":
			val = 0
		case "array":
			val = []any{}
		default:
			val = obj{}
		}
		o = append(o, kv{k.String(), val})
		return true
	})
	return string(marshal(o))
}

func (s *Server) models() obj {
	ids := s.script.Models
	if len(ids) == 0 {
		ids = []string{"fake-model"}
	}
	created := s.now().UTC()
	// One list that both Anthropic (type, display_name, created_at) and OpenAI
	// (object, created, owned_by) clients accept.
	data := make([]obj, len(ids))
	for i, id := range ids {
		data[i] = obj{{"type", "model"}, {"id", id}, {"display_name", id},
			{"created_at", created.Format(time.RFC3339)}, {"object", "model"},
			{"created", created.Unix()}, {"owned_by", "fakemodel"}}
	}
	return obj{{"object", "list"}, {"data", data}, {"has_more", false},
		{"first_id", ids[0]}, {"last_id", ids[len(ids)-1]}}
}

func (s *Server) record(rec Request, status int) {
	if status == 0 {
		status = http.StatusOK
	}
	rec.Status = status
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, rec)
	if rec.ScriptExhausted && s.warn != nil {
		fmt.Fprintf(s.warn, "fake model: script exhausted: request %d holds %d assistant turns, past its %d replies (counted from %d); answered with the final text %q\n",
			rec.Seq, rec.Turn, len(s.script.Replies), s.offset, or(s.script.Final, defaultFinal))
	}
	if s.log != nil && s.lerr == nil {
		if _, err := s.log.Write(append(marshal(rec), '\n')); err != nil {
			s.lerr = fmt.Errorf("write fake-model request log: %w", err)
		}
	}
}

// readBody reads at most maxBody bytes, decoding gzip. Other encodings (Codex can
// zstd-compress) are refused with a hint, since the stdlib cannot decode them.
func readBody(r *http.Request) ([]byte, error) {
	var rd io.Reader = http.MaxBytesReader(nil, r.Body, maxBody)
	switch enc := strings.ToLower(r.Header.Get("Content-Encoding")); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return nil, fmt.Errorf("fake model: bad gzip request body: %w", err)
		}
		rd = io.LimitReader(zr, maxBody)
	default:
		return nil, fmt.Errorf("fake model: request body encoding %q is not supported; "+
			"turn request compression off (Codex: features.enable_request_compression=false)", enc)
	}
	b, err := io.ReadAll(rd)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, errTooLarge
	}
	return b, err
}

var errTooLarge = fmt.Errorf("fake model: request body over %d bytes", maxBody)

// redact drops credential headers; everything else is kept for assertions.
func redact(h http.Header) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, v := range h {
		lk := strings.ToLower(k)
		if lk == "authorization" || lk == "proxy-authorization" || lk == "cookie" ||
			strings.Contains(lk, "api-key") || strings.Contains(lk, "token") || strings.Contains(lk, "secret") {
			continue
		}
		out[lk] = append([]string(nil), v...)
	}
	return out
}

func providerError(w http.ResponseWriter, p Protocol, status int, msg string) {
	w.Header().Set("x-should-retry", "false")
	if p == Anthropic {
		writeJSON(w, status, obj{{"type", "error"}, {"error", obj{{"type", "invalid_request_error"}, {"message", msg}}}})
		return
	}
	openAIError(w, status, msg)
}

func openAIError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, obj{{"error", obj{{"message", msg}, {"type", "invalid_request_error"},
		{"param", nil}, {"code", nil}}}})
}

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

// Unwrap lets http.ResponseController reach the real writer's Flush.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func includes(list gjson.Result, want string) bool {
	for _, v := range list.Array() {
		if v.String() == want {
			return true
		}
	}
	return false
}

func estimateTokens(n int) int { return n/4 + 1 }

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
