package bridge

import (
	"context"
	"fmt"
	"net/http"
)

// Request is one authenticated model request, as the Conversation sees it and, after
// Check, as the Upstream sends it.
type Request struct {
	// Seq numbers the model requests of this bridge from 1, in arrival order.
	// Concurrent requests get distinct numbers; a client retry gets a new one.
	Seq      int
	Protocol Protocol
	Route    Route
	// Path is what the client asked for, with its query (Claude Code posts to
	// /v1/messages?beta=true; the query is forwarded).
	Path string
	// Header holds the client's headers minus credentials, hop-by-hop headers,
	// Host, Content-Length and the encodings the bridge handles itself. Check may
	// edit it (for example rewrite Codex's x-codex-turn-metadata); the edited set is
	// forwarded.
	Header http.Header
	// Body is the request body with any Content-Encoding removed. Check must not
	// modify it in place: the bridge hashes it for the request log.
	Body []byte
}

// Conversation decides what reaches the model. The per-agent resume-envelope
// strippers implement it: they validate each request against the rebuilt session,
// strip the transport envelope (nonce, "Continue…" closure) and inject the boundary
// prompt.
//
// Check is called once per authenticated model request, possibly concurrently, and
// also for count_tokens (Route tells them apart; a token count of the enveloped
// conversation would be wrong too). It returns the body to forward — req.Body when
// nothing changes — or an error. Any error refuses the request: nothing is
// forwarded, the client gets a non-retryable 4xx in its protocol's error shape, and
// the refusal is sticky (every later model request is refused too) so the engine can
// stop the agent and fail the run with continuation_error. Return a *Refusal to choose
// the status and say precisely what did not match; never put prompt text or secrets
// in its reason, which reaches the agent's output and the run log.
//
// Clients re-send identical requests after stalls and transport errors, so Check
// must give the same answer for the same request whenever it comes.
type Conversation interface {
	Check(ctx context.Context, req *Request) (forward []byte, err error)
}

// ConversationFunc adapts a function to Conversation.
type ConversationFunc func(ctx context.Context, req *Request) ([]byte, error)

// Check calls f.
func (f ConversationFunc) Check(ctx context.Context, req *Request) ([]byte, error) {
	return f(ctx, req)
}

// Passthrough forwards every request unchanged: capture runs and upstream
// debugging, where there is no envelope to strip.
var Passthrough Conversation = ConversationFunc(func(_ context.Context, req *Request) ([]byte, error) {
	return req.Body, nil
})

// Refusal is a request the bridge will not forward.
type Refusal struct {
	// Status is the HTTP status sent to the client: a 4xx, 400 when zero. The CLIs
	// retry 408, 409 and 429, so those are replaced by 400.
	Status int
	// Reason says what did not match, for the agent's log and the run's failure
	// message.
	Reason string
}

// Refuse returns a 400 Refusal with a formatted reason.
func Refuse(format string, args ...any) *Refusal {
	return &Refusal{Reason: fmt.Sprintf(format, args...)}
}

func (r *Refusal) Error() string { return "request refused: " + r.Reason }

// status returns a non-retryable 4xx for r.
func (r *Refusal) status() int {
	switch s := r.Status; {
	case s < 400 || s > 499, s == http.StatusRequestTimeout, s == http.StatusConflict,
		s == http.StatusTooManyRequests:
		return http.StatusBadRequest
	default:
		return s
	}
}
