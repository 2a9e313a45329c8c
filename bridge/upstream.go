package bridge

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Upstream is where validated requests go: a real model service (HTTPUpstream) or
// something that plays one (the recorded upstream that answers from the original
// trajectory).
type Upstream interface {
	// Accepts reports whether the upstream speaks p. The bridge never translates
	// between protocols; a request in another protocol is refused before Check.
	Accepts(p Protocol) bool
	// Send forwards req (its Body is the checked body) and returns the response
	// unread: the bridge copies its status, headers and body to the client as they
	// arrive and closes the body. ctx ends when the client goes away; the upstream
	// request must end with it. An error means no response at all (unreachable
	// upstream); a provider error is a response with its own status and body.
	Send(ctx context.Context, req *Request) (*http.Response, error)
}

// UpstreamConfig configures an HTTPUpstream.
type UpstreamConfig struct {
	Protocol Protocol
	// BaseURL follows each SDK's convention: Anthropic's has no /v1
	// (https://api.anthropic.com; the bridge adds /v1/messages), OpenAI's includes
	// it (https://api.openai.com/v1; the bridge adds /responses or
	// /chat/completions). It may carry a query (for example an api-version), which
	// is sent along with the client's.
	BaseURL string
	// APIKey is sent as x-api-key (Anthropic) or Authorization: Bearer (OpenAI).
	APIKey string
	// AuthToken is sent as Authorization: Bearer to an Anthropic upstream when
	// APIKey is empty (what ANTHROPIC_AUTH_TOKEN means to Claude Code).
	AuthToken string
	// Transport overrides the default transport (tests). The default never uses a
	// proxy from the environment and never negotiates compression.
	Transport http.RoundTripper
	// Headers are set on every forwarded request, over the client's (the
	// model router's session key, X-LiteLLM-Session-ID).
	Headers http.Header
	// BodyFields are set at the top level of every forwarded JSON body
	// after the bridge checked it (--disable-thinking's
	// chat_template_kwargs); an object value merges into an object member.
	BodyFields map[string]json.RawMessage
	// FirstByteTimeout bounds the wait from sending a request to the
	// response headers; IdleTimeout bounds each wait for the next body
	// bytes once the answer streams. 0 means the defaults below.
	FirstByteTimeout time.Duration
	IdleTimeout      time.Duration
}

// The upstream timeouts' defaults. A streaming answer's headers arrive at
// once, but a non-streaming one's come only after all of the model's
// thinking, which can take minutes: 8 minutes leaves that room and still
// ends under the agent watchdog's 10 minutes, so a stalled service is named
// as the cause. Between stream bytes, a reasoning model that hides its
// thinking can be silent for minutes; 5 minutes is what OpenAI's own Codex
// CLI allows a stream before it calls it dead (stream_idle_timeout_ms).
const (
	DefaultFirstByteTimeout = 8 * time.Minute
	DefaultIdleTimeout      = 5 * time.Minute
)

// TimeoutError is an upstream request ended by FirstByteTimeout (Idle
// false: no response headers) or IdleTimeout (Idle: the body stopped).
type TimeoutError struct {
	Idle  bool
	After time.Duration
}

func (e *TimeoutError) Error() string {
	if e.Idle {
		return fmt.Sprintf("the model upstream's answer stopped: no bytes for %s", e.After)
	}
	return fmt.Sprintf("the model upstream sent no response headers within %s", e.After)
}

// Defaults used when neither the options nor the environment name a base URL.
const (
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
)

// FillFromEnv fills the empty fields from the variables the providers' own SDKs
// read: ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, or
// OPENAI_BASE_URL, OPENAI_API_KEY. getenv is usually os.Getenv.
func (c UpstreamConfig) FillFromEnv(getenv func(string) string) UpstreamConfig {
	set := func(dst *string, name string) {
		if *dst == "" {
			*dst = strings.TrimSpace(getenv(name))
		}
	}
	if c.Protocol == Anthropic {
		set(&c.BaseURL, "ANTHROPIC_BASE_URL")
		set(&c.APIKey, "ANTHROPIC_API_KEY")
		set(&c.AuthToken, "ANTHROPIC_AUTH_TOKEN")
	} else {
		set(&c.BaseURL, "OPENAI_BASE_URL")
		set(&c.APIKey, "OPENAI_API_KEY")
	}
	return c
}

// HTTPUpstream is a same-protocol passthrough to a model service.
type HTTPUpstream struct {
	proto     Protocol
	base      *url.URL
	authName  string // header that carries the credential, "" for none
	authValue string
	secret    string // the bare key, scrubbed from error messages
	headers   http.Header
	fields    map[string]json.RawMessage
	rt        http.RoundTripper
	firstByte time.Duration
	idle      time.Duration
}

// ErrNoAPIKey is wrapped by NewHTTPUpstream's error when a provider's public
// host is configured without a key.
var ErrNoAPIKey = errors.New("no API key")

// NewHTTPUpstream checks cfg and returns the upstream. A key is required for the
// providers' public hosts; a custom base URL (vLLM, LiteLLM, a local server) may go
// without one.
func NewHTTPUpstream(cfg UpstreamConfig) (*HTTPUpstream, error) {
	if _, err := ParseProtocol(string(cfg.Protocol)); err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	keyVar := "OPENAI_API_KEY"
	custom := cfg.BaseURL != ""
	if cfg.Protocol == Anthropic {
		keyVar = "ANTHROPIC_API_KEY"
		if !custom {
			cfg.BaseURL = DefaultAnthropicBaseURL
		}
	} else if !custom {
		cfg.BaseURL = DefaultOpenAIBaseURL
	}
	base, err := url.Parse(cfg.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		// The value is not echoed: a mistyped variable can hold a key.
		return nil, fmt.Errorf("upstream %s: base URL is not an absolute http(s) URL; set it like %s",
			cfg.Protocol, map[bool]string{true: DefaultAnthropicBaseURL, false: DefaultOpenAIBaseURL}[cfg.Protocol == Anthropic])
	}
	if base.User != nil {
		return nil, fmt.Errorf("upstream %s: base URL %s carries credentials; pass the key as %s instead",
			cfg.Protocol, base.Redacted(), keyVar)
	}
	if base.Fragment != "" {
		return nil, fmt.Errorf("upstream %s: base URL %s has a #fragment; remove it", cfg.Protocol, base.Redacted())
	}
	base.Path = strings.TrimSuffix(base.Path, "/")
	base.RawPath = ""
	if cfg.FirstByteTimeout < 0 || cfg.IdleTimeout < 0 {
		return nil, fmt.Errorf("upstream %s: a timeout is negative; give a positive duration (or 0 for the default)", cfg.Protocol)
	}
	u := &HTTPUpstream{proto: cfg.Protocol, base: base, rt: cfg.Transport, headers: http.Header{}, fields: cfg.BodyFields,
		firstByte: cmp.Or(cfg.FirstByteTimeout, DefaultFirstByteTimeout), idle: cmp.Or(cfg.IdleTimeout, DefaultIdleTimeout)}
	for k, v := range cfg.Headers {
		u.headers[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
	}
	switch {
	case cfg.Protocol == Anthropic && cfg.APIKey != "":
		u.authName, u.authValue, u.secret = "X-Api-Key", cfg.APIKey, cfg.APIKey
	case cfg.Protocol == Anthropic && cfg.AuthToken != "":
		u.authName, u.authValue, u.secret = "Authorization", "Bearer "+cfg.AuthToken, cfg.AuthToken
	case cfg.Protocol != Anthropic && cfg.APIKey != "":
		u.authName, u.authValue, u.secret = "Authorization", "Bearer "+cfg.APIKey, cfg.APIKey
	case !custom:
		return nil, fmt.Errorf("upstream %s: %w for %s; set %s (the bridge's own environment, never the agent's)",
			cfg.Protocol, ErrNoAPIKey, base.Host, keyVar)
	}
	if u.rt == nil {
		u.rt = newTransport()
	}
	return u, nil
}

// newTransport is the default upstream transport. Proxy is nil on purpose: the
// model traffic must go exactly where the base URL says (an ambient HTTPS_PROXY
// would otherwise see the key and the prompts). DisableCompression plus an explicit
// Accept-Encoding: identity keep the response bytes as the provider sent them.
// The transport has no response timeout of its own: Send times the headers
// and the body's silences (FirstByteTimeout, IdleTimeout), and the client's
// cancellation ends the request.
func newTransport() *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:               nil,
		DialContext:         d.DialContext,
		ForceAttemptHTTP2:   true,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 15 * time.Second,
		ReadBufferSize:      256 << 10,
		WriteBufferSize:     64 << 10,
	}
}

// Accepts reports whether p is the upstream's protocol.
func (u *HTTPUpstream) Accepts(p Protocol) bool { return p == u.proto }

// String names the upstream for logs; it never includes the key.
func (u *HTTPUpstream) String() string { return string(u.proto) + " " + u.base.Redacted() }

// target builds the upstream URL for req: base + (/v1 for Anthropic) + the route
// suffix, with the base's query followed by the client's.
func (u *HTTPUpstream) target(req *Request) (*url.URL, error) {
	var suffix string
	for _, rt := range modelRoutes {
		if rt.name == req.Route {
			suffix = rt.suffix
		}
	}
	if suffix == "" {
		return nil, fmt.Errorf("upstream %s: no endpoint for route %q", u.proto, req.Route)
	}
	t := *u.base
	if u.proto == Anthropic {
		suffix = "/v1" + suffix
	}
	t.Path += suffix
	if _, q, ok := strings.Cut(req.Path, "?"); ok && q != "" {
		if t.RawQuery != "" {
			t.RawQuery += "&"
		}
		t.RawQuery += q
	}
	return &t, nil
}

// Send forwards req with the upstream's credential in place of the client's.
func (u *HTTPUpstream) Send(ctx context.Context, req *Request) (*http.Response, error) {
	if !u.Accepts(req.Protocol) {
		return nil, fmt.Errorf("upstream %s cannot serve %s requests", u.proto, req.Protocol)
	}
	target, err := u.target(req)
	if err != nil {
		return nil, err
	}
	body, err := addFields(req.Body, u.fields)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", u, err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
	if err != nil {
		cancel(nil)
		return nil, fmt.Errorf("upstream %s: %w", u, err)
	}
	hr.Header = req.Header.Clone()
	if hr.Header == nil {
		hr.Header = http.Header{}
	}
	stripRequestHeaders(hr.Header) // a Conversation may have added some back
	for k, v := range u.headers {
		hr.Header[k] = append([]string(nil), v...)
	}
	if u.authName != "" {
		hr.Header.Set(u.authName, u.authValue)
	}
	hr.Header.Set("Accept-Encoding", "identity")
	if hr.Header.Get("Content-Type") == "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	timer := time.AfterFunc(u.firstByte, func() { cancel(&TimeoutError{After: u.firstByte}) })
	res, err := u.rt.RoundTrip(hr)
	timer.Stop()
	if err != nil {
		var te *TimeoutError
		if errors.As(context.Cause(ctx), &te) {
			cancel(nil)
			return nil, fmt.Errorf("upstream %s: %w", u, te)
		}
		cancel(nil)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("upstream %s: %w", u, scrub(err, u.secret))
	}
	b := &idleBody{rc: res.Body, ctx: ctx, cancel: cancel, after: u.idle}
	b.timer = time.AfterFunc(u.idle, func() { cancel(&TimeoutError{Idle: true, After: u.idle}) })
	b.timer.Stop() // armed by each Read
	res.Body = b
	return res, nil
}

// idleBody ends the request when one Read waits longer than after for the
// upstream. Only the time spent inside Read counts: a client that reads
// slowly holds the bridge up, not the upstream.
type idleBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	after  time.Duration
	timer  *time.Timer
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.timer.Reset(b.after)
	n, err := b.rc.Read(p)
	b.timer.Stop()
	if err != nil && err != io.EOF {
		var te *TimeoutError
		if errors.As(context.Cause(b.ctx), &te) {
			return n, te
		}
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	err := b.rc.Close()
	b.cancel(nil)
	return err
}

// scrub guarantees that an error message cannot carry the credential, whatever a
// transport puts into it.
func scrub(err error, secret string) error {
	if secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), secret, "[redacted]"))
}
