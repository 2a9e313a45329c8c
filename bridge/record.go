package bridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Outcome says how the bridge answered one request.
type Outcome string

const (
	OutcomeForwarded    Outcome = "forwarded"       // the upstream's answer reached the client in full
	OutcomeRefused      Outcome = "refused"         // the Conversation (or a mismatched upstream) said no
	OutcomeUpstreamFail Outcome = "upstream_error"  // unreachable upstream, or its stream broke off
	OutcomeCanceled     Outcome = "client_canceled" // the client went away first
	OutcomeLocal        Outcome = "local"           // answered by the bridge: HEAD /, GET /v1/models
	OutcomeUnauthorized Outcome = "unauthorized"    // missing or wrong token
	OutcomeRejected     Outcome = "rejected"        // foreign Host, browser origin, bad body, unknown route
)

// Record describes one request for the run's metadata. It never holds a body, a
// header value or a credential: sizes and SHA-256 digests only.
type Record struct {
	Seq      int       `json:"seq,omitempty"` // Request.Seq; 0 for requests that never became one
	Start    time.Time `json:"start"`
	Method   string    `json:"method"`
	Path     string    `json:"path"` // without the query
	Protocol Protocol  `json:"protocol,omitempty"`
	Route    Route     `json:"route,omitempty"`
	Status   int       `json:"status"`
	Outcome  Outcome   `json:"outcome"`
	// RequestBytes and RequestSHA256 describe the decoded body the client sent;
	// ForwardBytes and ForwardSHA256 the body after Check (equal when unchanged).
	RequestBytes  int    `json:"request_bytes"`
	RequestSHA256 string `json:"request_sha256,omitempty"`
	ForwardBytes  int    `json:"forward_bytes,omitempty"`
	ForwardSHA256 string `json:"forward_sha256,omitempty"`
	// ResponseBytes counts the body bytes relayed to the client.
	ResponseBytes     int64  `json:"response_bytes,omitempty"`
	UpstreamRequestID string `json:"upstream_request_id,omitempty"`
	DurationMS        int64  `json:"duration_ms"`
	// Message is the refusal reason or the upstream failure, as sent to the client.
	Message string `json:"message,omitempty"`
	// Usage is the answer's token usage, when it reported any.
	Usage *Usage `json:"usage,omitempty"`
}

// FailureKind classifies what went wrong with the model service, for the engine's
// model_rate_limit / model_internal_error / model_connection_error categories.
type FailureKind string

const (
	FailureRateLimit  FailureKind = "rate_limit" // upstream 429
	FailureInternal   FailureKind = "internal"   // upstream 5xx (529 overloaded included)
	FailureConnection FailureKind = "connection" // unreachable, or the stream broke off
)

// UpstreamFailure is the latest model-service failure a client saw.
type UpstreamFailure struct {
	Kind    FailureKind `json:"kind"`
	Status  int         `json:"status"` // what the client got: the upstream's status, or 502
	Seq     int         `json:"seq"`
	Message string      `json:"message,omitempty"` // bridge-made failures only; upstream bodies are not kept
	// Timeout says which upstream timeout ended the request, if one did:
	// TimeoutFirstByte or TimeoutIdle.
	Timeout string `json:"timeout,omitempty"`
}

// UpstreamFailure.Timeout values.
const (
	TimeoutFirstByte = "first_byte"
	TimeoutIdle      = "idle"
)

// timeoutOf names the upstream timeout behind err, "" for none.
func timeoutOf(err error) string {
	var te *TimeoutError
	switch {
	case !errors.As(err, &te):
		return ""
	case te.Idle:
		return TimeoutIdle
	}
	return TimeoutFirstByte
}

// Stats counts requests by outcome.
type Stats struct {
	Requests     int `json:"requests"`      // everything that reached the bridge
	Validated    int `json:"validated"`     // model requests Check accepted
	Forwarded    int `json:"forwarded"`     // model requests whose answer reached the client in full
	Refused      int `json:"refused"`       // model requests refused
	Unauthorized int `json:"unauthorized"`  // missing or wrong token
	Rejected     int `json:"rejected"`      // foreign Host, browser origin, bad body, unknown route
	UpstreamErr  int `json:"upstream_errs"` // upstream 429/5xx answers, unreachable upstream, broken streams
	// DroppedRecords counts records not kept once MaxRecords was reached.
	DroppedRecords int              `json:"dropped_records,omitempty"`
	LastFailure    *UpstreamFailure `json:"last_failure,omitempty"`
	// FirstUnauthorized is the first request refused for its token: a
	// client that never presents the token it was given (a launcher that
	// configured it the wrong way) is told apart from one that sent nothing.
	FirstUnauthorized *RefusedToken `json:"first_unauthorized,omitempty"`
	// Usage sums the token usage of the answers relayed (nil: none reported
	// any, so nothing is known about the tokens).
	Usage *Usage `json:"usage,omitempty"`
}

// RefusedToken locates a request answered 401: its place among all the
// requests that reached the bridge (1-based), method and path.
type RefusedToken struct {
	N      int    `json:"n"`
	Method string `json:"method"`
	Path   string `json:"path"`
}

// MaxRecords bounds the request log, so a local process hammering the port with
// bad tokens cannot grow the bridge's memory.
const MaxRecords = 10000

// journal is the server's request log and counters.
type journal struct {
	mu      sync.Mutex
	seq     int
	records []Record
	stats   Stats
}

func (j *journal) nextSeq() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	return j.seq
}

func (j *journal) add(rec Record, validated bool, fail *UpstreamFailure) {
	j.mu.Lock()
	defer j.mu.Unlock()
	st := &j.stats
	st.Requests++
	if validated {
		st.Validated++
	}
	switch rec.Outcome {
	case OutcomeForwarded:
		st.Forwarded++
	case OutcomeRefused:
		st.Refused++
	case OutcomeUnauthorized:
		st.Unauthorized++
		if st.FirstUnauthorized == nil {
			st.FirstUnauthorized = &RefusedToken{N: st.Requests, Method: rec.Method, Path: rec.Path}
		}
	case OutcomeRejected:
		st.Rejected++
	}
	if rec.Usage != nil {
		if st.Usage == nil {
			st.Usage = &Usage{}
		}
		st.Usage.add(*rec.Usage)
	}
	if fail != nil {
		st.UpstreamErr++
		f := *fail
		st.LastFailure = &f
	}
	if len(j.records) >= MaxRecords {
		st.DroppedRecords++
		return
	}
	j.records = append(j.records, rec)
}

// classify returns the failure an upstream status means, or nil.
func classify(status int) FailureKind {
	switch {
	case status == http.StatusTooManyRequests:
		return FailureRateLimit
	case status >= 500:
		return FailureInternal
	}
	return ""
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// digestLater hashes b on another goroutine; the returned func waits for the
// digest. b must not change meanwhile (Conversation.Check leaves the body as it
// is, and the forwarded body is only read). The func is for one goroutine.
func digestLater(b []byte) func() string {
	ch := make(chan string, 1)
	go func() { ch <- digest(b) }()
	var sum string
	return func() string {
		if ch != nil {
			sum, ch = <-ch, nil
		}
		return sum
	}
}

// logRecord writes rec as one log line: the same facts as the record, nothing more.
func (s *Server) logRecord(rec Record) {
	level := slog.LevelInfo
	if rec.Outcome != OutcomeForwarded && rec.Outcome != OutcomeLocal {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{slog.String("method", rec.Method), slog.String("path", trimPath(rec.Path)),
		slog.Int("status", rec.Status), slog.String("outcome", string(rec.Outcome)),
		slog.Int64("duration_ms", rec.DurationMS)}
	if rec.Seq != 0 {
		attrs = append(attrs, slog.Int("seq", rec.Seq), slog.Int("request_bytes", rec.RequestBytes),
			slog.String("request_sha256", rec.RequestSHA256), slog.Int("forward_bytes", rec.ForwardBytes),
			slog.String("forward_sha256", rec.ForwardSHA256), slog.Int64("response_bytes", rec.ResponseBytes))
	}
	if rec.UpstreamRequestID != "" {
		attrs = append(attrs, slog.String("upstream_request_id", rec.UpstreamRequestID))
	}
	if rec.Message != "" {
		attrs = append(attrs, slog.String("message", rec.Message))
	}
	s.log.LogAttrs(context.Background(), level, "bridge request", attrs...)
}
