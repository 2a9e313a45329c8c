package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// capture is an upstream that records the one request it gets and answers with a
// fixed response.
type capture struct {
	mu     sync.Mutex
	method string
	uri    string
	header http.Header
	body   []byte
}

func (c *capture) handler(status int, hdr map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.method, c.uri, c.header, c.body = r.Method, r.RequestURI, r.Header.Clone(), b
		c.mu.Unlock()
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// TestForwardedRequestGolden pins what the upstream receives for a request shaped
// like Claude Code's: its own headers verbatim, the bridge token replaced by the
// upstream key, no hop-by-hop or encoding negotiation, the query kept.
func TestForwardedRequestGolden(t *testing.T) {
	var c capture
	up := handlerUpstream(t, Anthropic, c.handler(200, map[string]string{
		"Content-Type": "application/json", "Request-Id": "req_up_1", "Retry-After": "3",
		"X-Should-Retry": "true", "Anthropic-Ratelimit-Unified-Status": "allowed",
		"Set-Cookie": "__cf_bm=abc", "X-Hop": "dropped", "Connection": "X-Hop",
	}, `{"type":"message"}`))
	s := startBridge(t, Options{Upstream: up})
	r := newReq(t, s, http.MethodPost, "/v1/messages?beta=true", requestBody(Anthropic, false))
	for k, v := range map[string]string{
		"Authorization": "Bearer " + s.Token(), "Anthropic-Version": "2023-06-01",
		"Anthropic-Beta": "claude-code-20250219,interleaved-thinking-2025-05-14", "X-App": "cli",
		"User-Agent": "claude-cli/2.1.197 (external, sdk-cli)", "X-Claude-Code-Session-Id": "f8f761e3",
		"X-Stainless-Retry-Count": "0", "Accept": "application/json",
		"Accept-Encoding": "gzip, deflate, br, zstd", "Connection": "keep-alive, X-Private",
		"X-Private": "hop-scoped", "Cookie": "a=b", "Proxy-Authorization": "Basic eA==", "Te": "trailers",
	} {
		r.Header.Set(k, v)
	}
	res, body := do(t, r)
	if res.StatusCode != 200 || string(body) != `{"type":"message"}` {
		t.Fatalf("%d %s", res.StatusCode, body)
	}

	var got strings.Builder
	fmt.Fprintf(&got, "%s %s\n", c.method, c.uri)
	var names []string
	for k := range c.header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := strings.Join(c.header[k], ", ")
		if v == upstreamKey {
			v = "<upstream key>"
		}
		fmt.Fprintf(&got, "%s: %s\n", k, v)
	}
	fmt.Fprintf(&got, "\n%s\n", c.body)
	compareGolden(t, "testdata/forwarded-request.golden", got.String())

	wantResp := http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_up_1"}, "Retry-After": {"3"},
		"X-Should-Retry": {"true"}, "Anthropic-Ratelimit-Unified-Status": {"allowed"}, "Content-Length": {"18"}}
	gotResp := res.Header.Clone()
	gotResp.Del("Date")
	if d := cmp.Diff(wantResp, gotResp); d != "" {
		t.Errorf("response headers (-want +got):\n%s", d)
	}
	s.Close()
	if rec := s.Records()[0]; rec.UpstreamRequestID != "req_up_1" {
		t.Errorf("record request id %q", rec.UpstreamRequestID)
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s differs (-want +got; -update rewrites):\n%s", path, d)
	}
}

func TestOpenAIUpstreamAuthAndURL(t *testing.T) {
	for _, p := range []Protocol{Responses, Chat} {
		var c capture
		srv := handlerUpstream(t, p, c.handler(200, nil, "{}")) // only for its address
		base := strings.TrimSuffix(srv.base.String(), "/v1") + "/openai/v1?api-version=7"
		up, err := NewHTTPUpstream(UpstreamConfig{Protocol: p, BaseURL: base, APIKey: upstreamKey})
		if err != nil {
			t.Fatal(err)
		}
		conv := ConversationFunc(func(_ context.Context, req *Request) ([]byte, error) {
			req.Header.Set("Authorization", "Bearer smuggled-by-a-checker")
			req.Header.Set("X-Api-Key", "smuggled")
			return req.Body, nil
		})
		s := startBridge(t, Options{Upstream: up, Conversation: conv})
		r := newReq(t, s, http.MethodPost, pathFor(p)+"?x=1", requestBody(p, false))
		r.Header.Del("Content-Type")
		if res, body := do(t, r); res.StatusCode != 200 {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		wantURI := "/openai/v1" + strings.TrimPrefix(pathFor(p), "/v1") + "?api-version=7&x=1"
		if c.uri != wantURI || c.header.Get("Authorization") != "Bearer "+upstreamKey ||
			c.header.Get("X-Api-Key") != "" || c.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: upstream got %s with auth %q, x-api-key %q, content-type %q", p, c.uri,
				c.header.Get("Authorization"), c.header.Get("X-Api-Key"), c.header.Get("Content-Type"))
		}
	}
}

func TestAnthropicAuthToken(t *testing.T) {
	var c capture
	probe := handlerUpstream(t, Anthropic, c.handler(200, nil, "{}"))
	up, err := NewHTTPUpstream(UpstreamConfig{Protocol: Anthropic, BaseURL: probe.base.String(), AuthToken: "oauth-tok"})
	if err != nil {
		t.Fatal(err)
	}
	s := startBridge(t, Options{Upstream: up})
	do(t, newReq(t, s, http.MethodPost, "/v1/messages/count_tokens", `{"messages":[]}`))
	if c.uri != "/v1/messages/count_tokens" || c.header.Get("Authorization") != "Bearer oauth-tok" || c.header.Get("X-Api-Key") != "" {
		t.Errorf("upstream got %s auth %q key %q", c.uri, c.header.Get("Authorization"), c.header.Get("X-Api-Key"))
	}
}

// TestUpstreamFailures: the client gets the upstream's own error (status, headers,
// body) or a provider-shaped 502, and Stats tells the engine which kind it was.
func TestUpstreamFailures(t *testing.T) {
	closed := closedAddr(t)
	for _, tc := range []struct {
		name    string
		proto   Protocol
		handler http.HandlerFunc // nil: nothing listens
		base    string
		status  int
		kind    FailureKind
		outcome Outcome
	}{
		{"connection refused", Anthropic, nil, "http://" + closed, 502, FailureConnection, OutcomeUpstreamFail},
		{"connection refused, openai", Responses, nil, "http://" + closed + "/v1", 502, FailureConnection, OutcomeUpstreamFail},
		{"rate limited", Anthropic, new(capture).handler(429, map[string]string{"Retry-After": "7", "Content-Type": "application/json"},
			`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`), "", 429, FailureRateLimit, OutcomeUpstreamFail},
		{"overloaded", Anthropic, new(capture).handler(529, nil,
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), "", 529, FailureInternal, OutcomeUpstreamFail},
		{"server error", Chat, new(capture).handler(503, nil,
			`{"error":{"message":"down","type":"server_error","param":null,"code":null}}`), "", 503, FailureInternal, OutcomeUpstreamFail},
		{"redirect", Responses, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://elsewhere.example/v1/responses", http.StatusTemporaryRedirect)
		}, "", 502, FailureConnection, OutcomeUpstreamFail},
		{"client error is not a model failure", Responses, new(capture).handler(400, nil,
			`{"error":{"message":"invalid_encrypted_content","type":"invalid_request_error","param":null,"code":"invalid_encrypted_content"}}`),
			"", 400, "", OutcomeForwarded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var up *HTTPUpstream
			if tc.handler != nil {
				up = handlerUpstream(t, tc.proto, tc.handler)
			} else {
				var err error
				if up, err = NewHTTPUpstream(UpstreamConfig{Protocol: tc.proto, BaseURL: tc.base, APIKey: upstreamKey}); err != nil {
					t.Fatal(err)
				}
			}
			s := startBridge(t, Options{Upstream: up})
			res, body := do(t, newReq(t, s, http.MethodPost, pathFor(tc.proto), requestBody(tc.proto, true)))
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
			}
			errorShape(t, tc.proto, body)
			if tc.status == 429 && res.Header.Get("Retry-After") != "7" {
				t.Error("Retry-After not passed through")
			}
			if tc.status == 502 && res.Header.Get("Location") != "" {
				t.Error("a redirect reached the client")
			}
			s.Close()
			st := s.Stats()
			if tc.kind == "" {
				if st.LastFailure != nil {
					t.Errorf("unexpected failure %+v", st.LastFailure)
				}
			} else if st.LastFailure == nil || st.LastFailure.Kind != tc.kind || st.LastFailure.Status != tc.status || st.LastFailure.Seq != 1 {
				t.Errorf("last failure %+v, want kind %s status %d", st.LastFailure, tc.kind, tc.status)
			}
			if rec := s.Records()[0]; rec.Outcome != tc.outcome || rec.Status != tc.status {
				t.Errorf("record outcome %s status %d", rec.Outcome, rec.Status)
			}
		})
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestBrokenStreamIsNotPassedOffAsComplete: when the upstream dies mid-stream the
// client must see an error, not a clean end of a truncated stream.
func TestBrokenStreamIsNotPassedOffAsComplete(t *testing.T) {
	up := handlerUpstream(t, Anthropic, func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		// A chunked response that stops after one event, without the last chunk.
		ev := "event: message_start\ndata: {}\n\n"
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(ev), ev)
		_ = buf.Flush()
	})
	s := startBridge(t, Options{Upstream: up})
	res, err := client().Do(newReq(t, s, http.MethodPost, "/v1/messages", requestBody(Anthropic, true)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if err == nil {
		t.Fatalf("client read a clean end after %q", got)
	}
	if string(got) != "event: message_start\ndata: {}\n\n" {
		t.Errorf("client got %q before the break", got)
	}
	s.Close()
	if f := s.Stats().LastFailure; f == nil || f.Kind != FailureConnection || s.Records()[0].Outcome != OutcomeUpstreamFail {
		t.Errorf("failure %+v, record %+v", f, s.Records()[0])
	}
}

// TestSecretsNeverLogged drives every path that writes a log line or a record —
// success, refusal, bad token, foreign host, unreachable upstream, upstream error —
// and scans everything the bridge wrote for the upstream key, the run token and
// the prompt text.
func TestSecretsNeverLogged(t *testing.T) {
	const prompt = "PROMPT-TEXT-must-not-be-logged"
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	refuseNext := false
	conv := ConversationFunc(func(_ context.Context, req *Request) ([]byte, error) {
		if refuseNext {
			return nil, Refuse("mismatch at message 3")
		}
		return req.Body, nil
	})
	var tokens []string
	var all []any
	run := func(up Upstream) {
		s := startBridge(t, Options{Upstream: up, Conversation: conv, Logger: logger})
		tokens = append(tokens, s.Token())
		body := strings.Replace(requestBody(Anthropic, true), "list files", prompt, 1)
		do(t, newReq(t, s, http.MethodPost, "/v1/messages?key="+upstreamKey, body))
		bad := newReq(t, s, http.MethodPost, "/v1/messages", body)
		bad.Header.Set("X-Api-Key", s.Token()+"x")
		do(t, bad)
		foreign := newReq(t, s, http.MethodPost, "/v1/messages", body)
		foreign.Host = "evil.example"
		do(t, foreign)
		refuseNext = true
		do(t, newReq(t, s, http.MethodPost, "/v1/messages", body))
		refuseNext = false
		s.Close()
		all = append(all, s.Records(), s.Stats())
	}
	_, root := newFake(t)
	run(newUpstream(t, Anthropic, root))
	down, err := NewHTTPUpstream(UpstreamConfig{Protocol: Anthropic, BaseURL: "http://" + closedAddr(t), APIKey: upstreamKey})
	if err != nil {
		t.Fatal(err)
	}
	run(down)
	run(handlerUpstream(t, Anthropic, new(capture).handler(500, nil, `{"type":"error","error":{"type":"api_error","message":"`+upstreamKey+`"}}`)))

	meta, _ := json.Marshal(all)
	mu.Lock()
	text := logs.String() + string(meta)
	mu.Unlock()
	if !strings.Contains(logs.String(), `"outcome":"refused"`) || !strings.Contains(logs.String(), `"outcome":"unauthorized"`) {
		t.Fatalf("the log does not cover the paths under test:\n%s", logs.String())
	}
	for _, secret := range append(tokens, upstreamKey, prompt, "pvisor-bridge-") {
		if strings.Contains(text, secret) {
			t.Errorf("%q appears in the log or records:\n%s", secret, text)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Errorf("log line is not JSON: %s", sc.Text())
		}
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestUpstreamConfig(t *testing.T) {
	env := map[string]string{
		"ANTHROPIC_BASE_URL": "https://gw.example/anthropic", "ANTHROPIC_API_KEY": "ak", "ANTHROPIC_AUTH_TOKEN": "at",
		"OPENAI_BASE_URL": "https://gw.example/v1", "OPENAI_API_KEY": " ok ",
	}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		in, want UpstreamConfig
	}{
		{UpstreamConfig{Protocol: Anthropic}, UpstreamConfig{Protocol: Anthropic, BaseURL: "https://gw.example/anthropic", APIKey: "ak", AuthToken: "at"}},
		{UpstreamConfig{Protocol: Responses, BaseURL: "http://127.0.0.1:9/v1"}, UpstreamConfig{Protocol: Responses, BaseURL: "http://127.0.0.1:9/v1", APIKey: "ok"}},
		{UpstreamConfig{Protocol: Chat, APIKey: "given"}, UpstreamConfig{Protocol: Chat, BaseURL: "https://gw.example/v1", APIKey: "given"}},
	} {
		if d := cmp.Diff(tc.want, tc.in.FillFromEnv(getenv)); d != "" {
			t.Errorf("FillFromEnv(%+v) (-want +got):\n%s", tc.in, d)
		}
	}

	for _, tc := range []struct {
		cfg     UpstreamConfig
		wantErr string // "" for success
	}{
		{UpstreamConfig{Protocol: Anthropic, APIKey: "k"}, ""},
		{UpstreamConfig{Protocol: Responses, BaseURL: "http://127.0.0.1:8000/v1"}, ""}, // a local server may need no key
		{UpstreamConfig{Protocol: Anthropic}, "set ANTHROPIC_API_KEY"},
		{UpstreamConfig{Protocol: Chat}, "set OPENAI_API_KEY"},
		{UpstreamConfig{Protocol: "gemini", APIKey: "k"}, "unknown model protocol"},
		{UpstreamConfig{Protocol: Chat, BaseURL: "api.openai.com/v1", APIKey: "k"}, "not an absolute http(s) URL"},
		{UpstreamConfig{Protocol: Chat, BaseURL: "ftp://x/v1", APIKey: "k"}, "not an absolute http(s) URL"},
		{UpstreamConfig{Protocol: Chat, BaseURL: "https://user:hunter2@x/v1", APIKey: "k"}, "carries credentials"},
		{UpstreamConfig{Protocol: Chat, BaseURL: "https://x/v1#frag", APIKey: "k"}, "#fragment"},
	} {
		_, err := NewHTTPUpstream(tc.cfg)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("NewHTTPUpstream(%+v): %v", tc.cfg, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("NewHTTPUpstream(%+v) = %v, want an error containing %q", tc.cfg, err, tc.wantErr)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("error echoes a password: %v", err)
		}
	}
}

func TestUpstreamTargets(t *testing.T) {
	for _, tc := range []struct {
		proto      Protocol
		base, path string
		route      Route
		want       string
	}{
		{Anthropic, "https://api.anthropic.com", "/v1/messages?beta=true", RouteMessages, "https://api.anthropic.com/v1/messages?beta=true"},
		{Anthropic, "https://gw.example/anthropic/", "/v1/messages/count_tokens", RouteCountTokens, "https://gw.example/anthropic/v1/messages/count_tokens"},
		{Responses, "https://api.openai.com/v1", "/v1/responses", RouteResponses, "https://api.openai.com/v1/responses"},
		{Chat, "http://127.0.0.1:8000/v1/", "/v1/chat/completions", RouteChat, "http://127.0.0.1:8000/v1/chat/completions"},
		{Chat, "https://x.example/openai/v1?api-version=1", "/v1/chat/completions?a=b", RouteChat, "https://x.example/openai/v1/chat/completions?api-version=1&a=b"},
	} {
		u, err := NewHTTPUpstream(UpstreamConfig{Protocol: tc.proto, BaseURL: tc.base, APIKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := u.target(&Request{Route: tc.route, Path: tc.path})
		if err != nil || got.String() != tc.want {
			t.Errorf("%s + %s = %v, %v; want %s", tc.base, tc.path, got, err, tc.want)
		}
	}
}

// UpstreamConfig.Headers (the model router's session key) reach the
// upstream on every request, over a client's own value.
func TestUpstreamHeaders(t *testing.T) {
	for _, p := range []Protocol{Responses, Anthropic} {
		var c capture
		srv := handlerUpstream(t, p, c.handler(200, nil, "{}"))
		up, err := NewHTTPUpstream(UpstreamConfig{Protocol: p, BaseURL: srv.base.String(), APIKey: upstreamKey,
			Headers: http.Header{"X-LiteLLM-Session-ID": {"run-7"}}})
		if err != nil {
			t.Fatal(err)
		}
		s := startBridge(t, Options{Upstream: up})
		r := newReq(t, s, http.MethodPost, pathFor(p), requestBody(p, false))
		r.Header.Set("X-LiteLLM-Session-ID", "from-the-agent")
		if res, body := do(t, r); res.StatusCode != 200 {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		if got := c.header.Values("X-LiteLLM-Session-ID"); len(got) != 1 || got[0] != "run-7" {
			t.Errorf("%s: upstream got session id %q", p, got)
		}
	}
}

// BodyFields reach the upstream in the forwarded body, and only there.
func TestUpstreamBodyFields(t *testing.T) {
	var c capture
	srv := handlerUpstream(t, Chat, c.handler(200, nil, "{}"))
	up, err := NewHTTPUpstream(UpstreamConfig{Protocol: Chat, BaseURL: srv.base.String(), APIKey: upstreamKey,
		BodyFields: map[string]json.RawMessage{"chat_template_kwargs": json.RawMessage(`{"enable_thinking":false}`)}})
	if err != nil {
		t.Fatal(err)
	}
	s := startBridge(t, Options{Upstream: up})
	sent := requestBody(Chat, false)
	if res, body := do(t, newReq(t, s, http.MethodPost, pathFor(Chat), sent)); res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	if got := gjson.GetBytes(c.body, "chat_template_kwargs.enable_thinking"); got.Type != gjson.False {
		t.Errorf("upstream body %s", c.body)
	}
	if gjson.GetBytes(c.body, "model").Str != gjson.Get(sent, "model").Str {
		t.Errorf("the rest of the body changed: %s", c.body)
	}
}
