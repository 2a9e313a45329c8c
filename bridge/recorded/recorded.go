// Package recorded is the upstream that plays a trajectory's own model
// responses: the actions the agent took after the boundary, A(N+1), A(N+2), …,
// answered in the agent's protocol with the scripted fake model's stream
// writers. A continuation driven by it needs no model service, which makes
// the whole replay pipeline runnable offline (the default demo and the e2e
// tests).
//
// Which action answers a request is decided the way the fake model decides it,
// by the assistant turns the conversation already holds: the first model
// request defines the base (the prefix the agent resumed with), and the i-th
// recorded action answers a conversation holding base+i turns. Retried and
// concurrent requests therefore get consistent answers. Requests past the last
// recorded action get a short final text, so the agent ends its turn.
package recorded

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/fakemodel"
)

// Upstream plays a script of recorded replies in one protocol.
type Upstream struct {
	proto  bridge.Protocol
	fproto fakemodel.Protocol
	script fakemodel.Script
	seed   string

	mu   sync.Mutex
	srv  *fakemodel.Server
	base int
}

// New returns an upstream that answers proto requests with replies, in order.
// seed keeps the ids it generates apart from those already in the session
// (use the run id).
func New(proto bridge.Protocol, replies []fakemodel.Reply, seed string, opts ...Option) (*Upstream, error) {
	fp, ok := map[bridge.Protocol]fakemodel.Protocol{
		bridge.Anthropic: fakemodel.Anthropic, bridge.Responses: fakemodel.Responses, bridge.Chat: fakemodel.Chat,
	}[proto]
	if !ok {
		return nil, fmt.Errorf("recorded upstream: unknown protocol %q", proto)
	}
	script := fakemodel.Script{Replies: replies,
		Final: "The recorded trajectory has no further action to play."}
	for _, o := range opts {
		o(&script)
	}
	if err := script.Validate(); err != nil {
		return nil, fmt.Errorf("recorded upstream: %w", err)
	}
	return &Upstream{proto: proto, fproto: fp, script: script, seed: seed}, nil
}

// Option adjusts how the replies are played.
type Option func(*fakemodel.Script)

// TextActions plays the replies to requests without tools too, for agents
// that parse their actions from the reply text (mini-swe-agent 1.x).
func TextActions() Option { return func(s *fakemodel.Script) { s.TextActions = true } }

// Accepts reports whether p is the protocol the replies are played in.
func (u *Upstream) Accepts(p bridge.Protocol) bool { return p == u.proto }

// String names the upstream for logs.
func (u *Upstream) String() string {
	return fmt.Sprintf("recorded (%d actions, %s)", len(u.script.Replies), u.proto)
}

// Stats says what was played.
type Stats struct {
	Actions int `json:"actions"` // recorded actions available
	Base    int `json:"base"`    // assistant turns the first model request held
	Played  int `json:"played"`  // distinct recorded actions served
	PastEnd int `json:"past_end"`
	Side    int `json:"side"` // tool-less requests (titles, summaries)
}

// Fresh is an unplayed copy of u, with the same replies and ids: the
// continuation benchmark serves it to the CLI directly, without a bridge, to
// time the CLI alone against exactly what pvisor played to it.
func (u *Upstream) Fresh() *Upstream {
	return &Upstream{proto: u.proto, fproto: u.fproto, script: u.script, seed: u.seed}
}

// Stats reports the replies served so far.
func (u *Upstream) Stats() Stats {
	u.mu.Lock()
	srv, base := u.srv, u.base
	u.mu.Unlock()
	st := Stats{Actions: len(u.script.Replies), Base: base}
	if srv == nil {
		return st
	}
	played := map[int]bool{}
	for _, r := range srv.Requests() {
		switch r.Kind {
		case fakemodel.KindMain:
			played[r.Reply] = true
		case fakemodel.KindFinal:
			st.PastEnd++
		case fakemodel.KindSide:
			st.Side++
		}
	}
	st.Played = len(played)
	return st
}

// server returns the fake model, created on the first model request (one that
// offers tools, or any request for text-action agents) with that request's
// turns as the base.
func (u *Upstream) server(body []byte) *fakemodel.Server {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.srv == nil && (u.script.TextActions || len(gjson.GetBytes(body, "tools").Array()) > 0) {
		u.base = fakemodel.AssistantTurns(u.fproto, body)
		u.srv = fakemodel.New(u.script, fakemodel.WithReplyOffset(u.base), fakemodel.WithIDSeed(u.seed),
			fakemodel.WithoutBodies())
	}
	if u.srv == nil {
		// A side request before any model request: answer it without fixing
		// the base.
		return fakemodel.New(u.script, fakemodel.WithIDSeed(u.seed), fakemodel.WithoutBodies())
	}
	return u.srv
}

// Send answers req in process. The response streams as the fake model writes
// it; closing its body (the bridge does when the client leaves) stops the
// writer.
func (u *Upstream) Send(ctx context.Context, req *bridge.Request) (*http.Response, error) {
	if !u.Accepts(req.Protocol) {
		return nil, fmt.Errorf("recorded upstream plays %s, not %s", u.proto, req.Protocol)
	}
	srv := u.server(req.Body)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://recorded.invalid"+req.Path, bytes.NewReader(req.Body))
	if err != nil {
		return nil, err
	}
	hr.Header = req.Header.Clone()
	pw := newPipeWriter()
	go func() {
		defer pw.finish()
		srv.ServeHTTP(pw, hr)
	}()
	select {
	case res := <-pw.ready:
		res.Request = hr
		return res, nil
	case <-ctx.Done():
		pw.body.CloseWithError(ctx.Err())
		return nil, ctx.Err()
	}
}

// pipeWriter is an http.ResponseWriter whose body is read from the other end
// of a pipe: the response is handed over as soon as the handler commits its
// header, and every write reaches the reader as it happens.
type pipeWriter struct {
	header http.Header
	body   *io.PipeReader
	w      *io.PipeWriter
	ready  chan *http.Response
	sent   bool
}

func newPipeWriter() *pipeWriter {
	r, w := io.Pipe()
	return &pipeWriter{header: http.Header{}, body: r, w: w, ready: make(chan *http.Response, 1)}
}

func (p *pipeWriter) Header() http.Header { return p.header }

func (p *pipeWriter) WriteHeader(code int) {
	if p.sent {
		return
	}
	p.sent = true
	p.ready <- &http.Response{StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: p.header.Clone(), Body: p.body, ContentLength: -1}
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return p.w.Write(b)
}

// Flush is a no-op: writes already reach the reader unbuffered.
func (p *pipeWriter) Flush() {}

func (p *pipeWriter) finish() {
	p.WriteHeader(http.StatusOK)
	p.w.Close()
}
