package translate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/pvisor/pvisor/bridge"
)

// maxAnswer caps a non-streaming answer or an error body read into memory.
const maxAnswer = 32 << 20

// ChatUpstream serves Anthropic Messages requests from an OpenAI Chat Completions
// server. The HTTP side (key, base URL rules, no proxy, identity encoding, key
// scrubbing) is bridge.HTTPUpstream's; this type only rewrites bodies.
type ChatUpstream struct {
	http  *bridge.HTTPUpstream
	model string
}

// NewChatUpstream returns an upstream that sends to cfg.BaseURL + /chat/completions
// (cfg.Protocol is ignored: the far side is always openai-chat) and asks for
// model; an empty model keeps the model each request names, which is rarely what
// a vLLM server serves.
func NewChatUpstream(cfg bridge.UpstreamConfig, model string) (*ChatUpstream, error) {
	cfg.Protocol = bridge.Chat
	h, err := bridge.NewHTTPUpstream(cfg)
	if err != nil {
		return nil, err
	}
	return &ChatUpstream{http: h, model: model}, nil
}

// Accepts reports true for Anthropic Messages only: that is the side the agent speaks.
func (u *ChatUpstream) Accepts(p bridge.Protocol) bool { return p == bridge.Anthropic }

// String names the upstream for logs; it never includes the key.
func (u *ChatUpstream) String() string { return "anthropic→" + u.http.String() }

// Send translates req, sends it and returns a response in Anthropic's shape. A
// streamed answer is translated as it arrives through a pipe; closing the
// returned body, or ctx ending, stops the upstream request.
func (u *ChatUpstream) Send(ctx context.Context, req *bridge.Request) (*http.Response, error) {
	if req.Protocol != bridge.Anthropic {
		return nil, fmt.Errorf("upstream %s cannot serve %s requests", u, req.Protocol)
	}
	if req.Route == bridge.RouteCountTokens {
		// Claude Code estimates by itself when counting is unavailable.
		return anthropicError(http.StatusNotFound, "not_found_error",
			"count_tokens is not available through an openai-chat upstream"), nil
	}
	body, stream, err := messagesToChat(req.Body, u.model)
	if err != nil {
		return anthropicError(http.StatusBadRequest, "invalid_request_error", err.Error()), nil
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	if ua := req.Header.Get("User-Agent"); ua != "" {
		h.Set("User-Agent", ua)
	}
	// Only the Chat route and a query-less path: Anthropic's ?beta=true and
	// anthropic-* headers mean nothing to a Chat server.
	res, err := u.http.Send(ctx, &bridge.Request{Seq: req.Seq, Protocol: bridge.Chat, Route: bridge.RouteChat,
		Path: "/v1/chat/completions", Header: h, Body: body})
	if err != nil {
		return nil, err
	}
	out := &http.Response{Status: res.Status, StatusCode: res.StatusCode, Proto: res.Proto,
		ProtoMajor: res.ProtoMajor, ProtoMinor: res.ProtoMinor, Header: http.Header{}, ContentLength: -1, Request: res.Request}
	for _, k := range []string{"Retry-After", "Retry-After-Ms", "X-Should-Retry"} {
		if v := res.Header.Values(k); len(v) > 0 {
			out.Header[k] = v
		}
	}
	if id := res.Header.Get("X-Request-Id"); id != "" {
		out.Header.Set("Request-Id", id)
	}

	if res.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
		res.Body.Close()
		return withJSON(out, ErrorToAnthropic(res.StatusCode, b)), nil
	}
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if !stream {
		b, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
		res.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("upstream %s: read answer: %w", u, err)
		}
		msg, err := ChatToMessage(b)
		if err != nil {
			return anthropicError(http.StatusBadGateway, "api_error", err.Error()), nil
		}
		return withJSON(out, msg), nil
	}
	if mt != "text/event-stream" {
		res.Body.Close()
		return anthropicError(http.StatusBadGateway, "api_error", fmt.Sprintf(
			"translate: the openai-chat upstream answered a streaming request with Content-Type %q instead of text/event-stream", mt)), nil
	}
	out.Header.Set("Content-Type", "text/event-stream; charset=utf-8")
	out.Header.Set("Cache-Control", "no-cache")
	pr, pw := io.Pipe()
	go func() {
		err := StreamToAnthropic(pw, res.Body)
		res.Body.Close()
		pw.CloseWithError(err) // nil: a clean EOF for the reader
	}()
	out.Body = &pipeBody{pr: pr, upstream: res.Body}
	return out, nil
}

// pipeBody closes the upstream body too, so a reader that gives up does not
// leave the translating goroutine blocked on a silent upstream.
type pipeBody struct {
	pr       *io.PipeReader
	upstream io.Closer
}

func (b *pipeBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

func (b *pipeBody) Close() error {
	b.pr.CloseWithError(errors.New("translate: response body closed"))
	return b.upstream.Close()
}

func withJSON(res *http.Response, body []byte) *http.Response {
	res.Header.Set("Content-Type", "application/json")
	res.Header.Set("Content-Length", strconv.Itoa(len(body)))
	res.ContentLength = int64(len(body))
	res.Body = io.NopCloser(bytes.NewReader(body))
	return res
}

// anthropicError is a response the bridge relays as if the upstream wrote it;
// x-should-retry: false because re-sending the same request cannot help.
func anthropicError(status int, typ, msg string) *http.Response {
	body, _ := marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	res := &http.Response{Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}}
	res.Header.Set("X-Should-Retry", "false")
	return withJSON(res, body)
}
