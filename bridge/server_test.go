package bridge

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestListensOnLoopbackOnly(t *testing.T) {
	_, root := newFake(t)
	a := startBridge(t, Options{Upstream: newUpstream(t, Anthropic, root)})
	b := startBridge(t, Options{Upstream: newUpstream(t, Anthropic, root)})
	if !strings.HasPrefix(a.Addr(), "127.0.0.1:") || a.URL() != "http://"+a.Addr() {
		t.Errorf("addr %s, url %s", a.Addr(), a.URL())
	}
	if a.Token() == b.Token() {
		t.Error("two bridges share a token")
	}
	// 14-byte prefix + 256 random bits in hex.
	if len(a.Token()) != len("pvisor-bridge-")+64 {
		t.Errorf("token %d chars", len(a.Token()))
	}
}

func TestStartNeedsUpstreamAndConversation(t *testing.T) {
	_, root := newFake(t)
	up := newUpstream(t, Anthropic, root)
	for _, opts := range []Options{{Conversation: Passthrough}, {Upstream: up}} {
		if s, err := Start(opts); err == nil {
			s.Close()
			t.Errorf("Start(%+v) succeeded", opts)
		}
	}
}

func TestAuthentication(t *testing.T) {
	fm, root := newFake(t)
	s := startBridge(t, Options{Upstream: newUpstream(t, Anthropic, root)})
	tok := s.Token()
	wrong := tok[:len(tok)-1] + "0"
	if wrong == tok {
		wrong = tok[:len(tok)-1] + "1"
	}
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"none", nil, 401},
		{"wrong x-api-key", map[string]string{"X-Api-Key": wrong}, 401},
		{"wrong bearer", map[string]string{"Authorization": "Bearer " + wrong}, 401},
		{"prefix of the token", map[string]string{"X-Api-Key": tok[:20]}, 401},
		{"token with another scheme", map[string]string{"Authorization": "Basic " + tok}, 401},
		{"right key, wrong bearer", map[string]string{"X-Api-Key": tok, "Authorization": "Bearer " + wrong}, 401},
		{"x-api-key", map[string]string{"X-Api-Key": tok}, 200},
		{"bearer", map[string]string{"Authorization": "Bearer " + tok}, 200},
		{"bearer, lower-case scheme", map[string]string{"Authorization": "bearer " + tok}, 200},
		{"both", map[string]string{"X-Api-Key": tok, "Authorization": "Bearer " + tok}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(fm.Requests())
			r := newReq(t, s, http.MethodPost, "/v1/messages", requestBody(Anthropic, false))
			r.Header.Del("X-Api-Key")
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			res, body := do(t, r)
			if res.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.want, body)
			}
			if tc.want == 200 {
				waitFor(t, func() bool { return len(fm.Requests()) > before }) // the fake logs after answering
			}
			forwarded := len(fm.Requests()) - before
			if tc.want == 401 {
				typ, msg, _ := errorShape(t, Anthropic, body)
				if typ != "authentication_error" || strings.Contains(msg, tok) || strings.Contains(msg, wrong) {
					t.Errorf("401 body %s", body)
				}
				if forwarded != 0 {
					t.Error("an unauthenticated request reached the upstream")
				}
			} else if forwarded != 1 {
				t.Errorf("%d upstream requests, want 1", forwarded)
			}
		})
	}
	s.Close()
	st := s.Stats()
	if st.Unauthorized != 6 || st.Forwarded != 4 {
		t.Errorf("stats %+v", st)
	}
	// The first request (no key at all) is the one the engine names when
	// a CLI never presents its token.
	if u := st.FirstUnauthorized; u == nil || *u != (RefusedToken{N: 1, Method: http.MethodPost, Path: "/v1/messages"}) {
		t.Errorf("first unauthorized = %+v", u)
	}
}

func TestUnauthorizedOpenAIShape(t *testing.T) {
	_, root := newFake(t)
	s := startBridge(t, Options{Upstream: newUpstream(t, Responses, root)})
	r := newReq(t, s, http.MethodPost, "/v1/responses", requestBody(Responses, false))
	r.Header.Set("X-Api-Key", "nope")
	res, body := do(t, r)
	if typ, _, code := errorShape(t, Responses, body); res.StatusCode != 401 || typ != "invalid_request_error" || code != "invalid_api_key" {
		t.Errorf("status %d body %s", res.StatusCode, body)
	}
	if res.Header.Get("x-should-retry") != "false" {
		t.Error("401 without x-should-retry: false")
	}
}

func TestForeignHostAndBrowserRequestsAreRefused(t *testing.T) {
	fm, root := newFake(t)
	s := startBridge(t, Options{Upstream: newUpstream(t, Anthropic, root)})
	port := s.Addr()[strings.LastIndex(s.Addr(), ":")+1:]
	other := strconv.Itoa(mustAtoi(t, port) + 1)
	for _, tc := range []struct {
		name   string
		host   string
		header map[string]string
		want   int
	}{
		{"rebinding name", "attacker.example:" + port, nil, 421},
		{"no port", "127.0.0.1", nil, 421},
		{"other port", "127.0.0.1:" + other, nil, 421},
		{"ipv6 loopback", "[::1]:" + port, nil, 421},
		{"localhost suffix", "localhost.attacker.example:" + port, nil, 421},
		{"browser origin", "", map[string]string{"Origin": "http://attacker.example"}, 403},
		{"empty origin", "", map[string]string{"Origin": ""}, 403},
		{"cross-site fetch", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"127.0.0.1", "", nil, 200},
		{"localhost", "localhost:" + port, nil, 200},
		{"LOCALHOST", "LOCALHOST:" + port, nil, 200},
		{"node fetch marker", "", map[string]string{"Sec-Fetch-Mode": "cors"}, 200}, // Pi's OpenAI SDK sends it
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(fm.Requests())
			r := newReq(t, s, http.MethodPost, "/v1/messages", requestBody(Anthropic, false))
			if tc.host != "" {
				r.Host = tc.host
			}
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			res, body := do(t, r)
			if res.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.want, body)
			}
			if tc.want != 200 {
				if typ, _, _ := errorShape(t, Anthropic, body); typ != "permission_error" {
					t.Errorf("error type %q", typ)
				}
				if len(fm.Requests()) != before {
					t.Error("a refused request reached the upstream")
				}
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRequestBodyLimitsAndEncodings(t *testing.T) {
	var got atomic.Value
	up := handlerUpstream(t, Responses, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(r.Header.Get("Content-Encoding") + "|" + string(b))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
	const max = 4096
	s := startBridge(t, Options{Upstream: up, MaxBodyBytes: max})
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(b)
		_ = zw.Close()
		return buf.Bytes()
	}
	small := []byte(`{"input":"` + strings.Repeat("a", 100) + `"}`)
	exact := []byte(`{"input":"` + strings.Repeat("a", max-13) + `"}`)
	big := []byte(`{"input":"` + strings.Repeat("a", max) + `"}`)
	for _, tc := range []struct {
		name     string
		body     []byte
		encoding string
		chunked  bool // hide the length, so only the reader's cap can catch it
		want     int
		wantUp   string
	}{
		{"small", small, "", false, 200, "|" + string(small)},
		{"exactly the cap", exact, "", false, 200, "|" + string(exact)},
		{"over the cap", big, "", false, 413, ""},
		{"over the cap, chunked", big, "", true, 413, ""},
		{"gzip is decoded", gz(small), "gzip", false, 200, "|" + string(small)},
		{"gzip bomb", gz(bytes.Repeat([]byte("a"), 50*max)), "gzip", false, 413, ""},
		{"corrupt gzip", []byte("not gzip"), "gzip", false, 400, ""},
		{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd}, "zstd", false, 415, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got.Store("")
			r := newReq(t, s, http.MethodPost, "/v1/responses", "")
			r.Body = io.NopCloser(bytes.NewReader(tc.body))
			r.ContentLength = int64(len(tc.body))
			if tc.chunked {
				r.ContentLength = -1
			}
			if tc.encoding != "" {
				r.Header.Set("Content-Encoding", tc.encoding)
			}
			res, body := do(t, r)
			if res.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.want, body)
			}
			if tc.want != 200 {
				typ, msg, code := errorShape(t, Responses, body)
				if typ != "invalid_request_error" || code == "" || msg == "" {
					t.Errorf("error %q %q %q", typ, code, msg)
				}
			}
			if g := got.Load().(string); g != tc.wantUp {
				t.Errorf("upstream got %.60q, want %.60q", g, tc.wantUp)
			}
		})
	}
}

func TestLocalAnswersAndRoutes(t *testing.T) {
	fm, root := newFake(t)
	s := startBridge(t, Options{Upstream: newUpstream(t, Anthropic, root), Models: []string{"claude-a", "claude-b"}})

	r := newReq(t, s, http.MethodHead, "/", "")
	if res, _ := do(t, r); res.StatusCode != 200 {
		t.Errorf("HEAD / = %d", res.StatusCode)
	}
	r = newReq(t, s, http.MethodHead, "/", "")
	r.Header.Del("X-Api-Key")
	if res, _ := do(t, r); res.StatusCode != 401 {
		t.Errorf("HEAD / without the token = %d, want 401", res.StatusCode)
	}

	res, body := do(t, newReq(t, s, http.MethodGet, "/v1/models", ""))
	var list struct {
		Object  string `json:"object"`
		HasMore bool   `json:"has_more"`
		FirstID string `json:"first_id"`
		LastID  string `json:"last_id"`
		Data    []struct {
			Type, ID, Object string
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /v1/models: %d %s %v", res.StatusCode, body, err)
	}
	if list.Object != "list" || list.FirstID != "claude-a" || list.LastID != "claude-b" || len(list.Data) != 2 ||
		list.Data[0].Type != "model" || list.Data[0].Object != "model" || list.Data[1].ID != "claude-b" {
		t.Errorf("models list %s", body)
	}

	for _, tc := range []struct {
		method, path string
		proto        Protocol
		want         int
	}{
		{http.MethodGet, "/v1/messages", Anthropic, 405},
		{http.MethodGet, "/v1/responses", Responses, 405}, // also Codex's WebSocket upgrade: it falls back to HTTP
		{http.MethodPost, "/v1/messages/batches", Anthropic, 404},
		{http.MethodPost, "/v1/embeddings", Responses, 404},
		{http.MethodGet, "/", Responses, 404},
		{http.MethodPost, "/messages", Responses, 404},
	} {
		res, body := do(t, newReq(t, s, tc.method, tc.path, ""))
		if res.StatusCode != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, res.StatusCode, tc.want)
			continue
		}
		errorShape(t, tc.proto, body)
	}
	if n := len(fm.Requests()); n != 0 {
		t.Errorf("%d requests reached the upstream", n)
	}
}

// TestRefusal: a refused request gets a non-retryable 4xx in the client's protocol,
// nothing reaches the upstream, the engine is told once, and the run stays refused.
func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		proto   Protocol
		err     error
		status  int
		reason  string
		errType string
	}{
		{Anthropic, Refuse("nonce found %d times", 2), 400, "nonce found 2 times", "invalid_request_error"},
		{Responses, &Refusal{Status: 422, Reason: "boundary hash differs"}, 422, "boundary hash differs", "invalid_request_error"},
		{Chat, &Refusal{Status: 429, Reason: "retryable status replaced"}, 400, "retryable status replaced", "invalid_request_error"},
		{Anthropic, errors.New("plain error"), 400, "plain error", "invalid_request_error"},
	} {
		t.Run(string(tc.proto)+"/"+tc.reason, func(t *testing.T) {
			fm, root := newFake(t)
			var checks, hooks atomic.Int32
			conv := ConversationFunc(func(_ context.Context, req *Request) ([]byte, error) {
				checks.Add(1)
				return nil, tc.err
			})
			var hooked *Refusal
			s := startBridge(t, Options{Upstream: newUpstream(t, tc.proto, root), Conversation: conv,
				OnRefusal: func(r *Refusal) { hooks.Add(1); hooked = r }})

			res, body := do(t, newReq(t, s, http.MethodPost, pathFor(tc.proto), requestBody(tc.proto, true)))
			if res.StatusCode != tc.status || res.Header.Get("x-should-retry") != "false" {
				t.Fatalf("status %d, x-should-retry %q", res.StatusCode, res.Header.Get("x-should-retry"))
			}
			typ, msg, _ := errorShape(t, tc.proto, body)
			if typ != tc.errType || msg != messagePrefix+tc.reason {
				t.Errorf("error %q %q", typ, msg)
			}
			select {
			case <-s.Refused():
			default:
				t.Fatal("Refused() not closed")
			}
			if s.Refusal() == nil || s.Refusal().Reason != tc.reason || hooked != s.Refusal() {
				t.Errorf("Refusal() = %+v, hook got %+v", s.Refusal(), hooked)
			}

			// Sticky: the next request is refused without asking the Conversation.
			res, body = do(t, newReq(t, s, http.MethodPost, pathFor(tc.proto), requestBody(tc.proto, true)))
			if _, msg, _ := errorShape(t, tc.proto, body); res.StatusCode != tc.status ||
				!strings.Contains(msg, "earlier request of this run was refused: "+tc.reason) {
				t.Errorf("second request: %d %s", res.StatusCode, body)
			}
			if checks.Load() != 1 || hooks.Load() != 1 {
				t.Errorf("Check called %d times, OnRefusal %d times; want 1 and 1", checks.Load(), hooks.Load())
			}
			if n := len(fm.Requests()); n != 0 {
				t.Errorf("%d requests reached the upstream", n)
			}
			s.Close()
			st := s.Stats()
			if st.Refused != 2 || st.Validated != 0 || st.Forwarded != 0 {
				t.Errorf("stats %+v", st)
			}
			for _, rec := range s.Records() {
				if rec.Outcome != OutcomeRefused || rec.ForwardSHA256 != "" || rec.RequestSHA256 == "" {
					t.Errorf("record %+v", rec)
				}
			}
		})
	}
}

func TestProtocolMismatchIsRefused(t *testing.T) {
	fm, root := newFake(t)
	var checks atomic.Int32
	conv := ConversationFunc(func(_ context.Context, req *Request) ([]byte, error) { checks.Add(1); return req.Body, nil })
	s := startBridge(t, Options{Upstream: newUpstream(t, Chat, root), Conversation: conv})
	res, body := do(t, newReq(t, s, http.MethodPost, "/v1/messages", requestBody(Anthropic, false)))
	if _, msg, _ := errorShape(t, Anthropic, body); res.StatusCode != 400 || !strings.Contains(msg, "speaks anthropic") {
		t.Errorf("%d %s", res.StatusCode, body)
	}
	if checks.Load() != 0 || len(fm.Requests()) != 0 || s.Refusal() == nil {
		t.Error("a request in the wrong protocol was checked, forwarded or not recorded as a refusal")
	}
}

// TestConversationRewrites: what Check returns (body and header edits) is what the
// upstream gets, and the record tells the two bodies apart.
func TestConversationRewrites(t *testing.T) {
	fm, root := newFake(t)
	var seen *Request
	conv := ConversationFunc(func(_ context.Context, req *Request) ([]byte, error) {
		seen = &Request{Seq: req.Seq, Protocol: req.Protocol, Route: req.Route, Path: req.Path, Header: req.Header.Clone()}
		req.Header.Set("X-Codex-Turn-Metadata", `{"history_initialization":"new"}`)
		return bytes.Replace(req.Body, []byte("NONCE-123"), nil, 1), nil
	})
	s := startBridge(t, Options{Upstream: newUpstream(t, Responses, root), Conversation: conv})
	in := strings.Replace(requestBody(Responses, false), "list files", "list filesNONCE-123", 1)
	r := newReq(t, s, http.MethodPost, "/v1/responses?trace=1", in)
	r.Header.Set("X-Codex-Turn-Metadata", `{"history_initialization":"cold_resume"}`)
	if res, body := do(t, r); res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	want := &Request{Seq: 1, Protocol: Responses, Route: RouteResponses, Path: "/v1/responses?trace=1",
		Header: http.Header{"Content-Type": {"application/json"}, "User-Agent": {"Go-http-client/1.1"},
			"X-Codex-Turn-Metadata": {`{"history_initialization":"cold_resume"}`}}}
	if d := cmp.Diff(want, seen); d != "" {
		t.Errorf("Check saw (-want +got):\n%s", d)
	}
	waitFor(t, func() bool { return len(fm.Requests()) == 1 })
	up := fm.Requests()[0]
	if string(up.Body) != requestBody(Responses, false) {
		t.Errorf("upstream body %s", up.Body)
	}
	if g := up.Header["x-codex-turn-metadata"]; len(g) != 1 || g[0] != `{"history_initialization":"new"}` {
		t.Errorf("upstream header %q", g)
	}
	if up.Path != "/v1/responses?trace=1" {
		t.Errorf("upstream path %s", up.Path)
	}
	s.Close()
	rec := s.Records()[0]
	if rec.RequestBytes != len(in) || rec.ForwardBytes != len(in)-len("NONCE-123") ||
		rec.RequestSHA256 != digest([]byte(in)) || rec.ForwardSHA256 != digest(up.Body) {
		t.Errorf("record %+v", rec)
	}
}

// TestRecordDigestsUnchangedBody: a body the check forwards as it is (the same
// slice or an equal copy) is recorded with one digest for both sides.
func TestRecordDigestsUnchangedBody(t *testing.T) {
	for _, tc := range []struct {
		name string
		conv Conversation
	}{
		{"same slice", Passthrough},
		{"equal copy", ConversationFunc(func(_ context.Context, req *Request) ([]byte, error) {
			return bytes.Clone(req.Body), nil
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, root := newFake(t)
			s := startBridge(t, Options{Upstream: newUpstream(t, Chat, root), Conversation: tc.conv})
			in := requestBody(Chat, false)
			if res, body := do(t, newReq(t, s, http.MethodPost, "/v1/chat/completions", in)); res.StatusCode != 200 {
				t.Fatalf("%d %s", res.StatusCode, body)
			}
			s.Close()
			rec := s.Records()[0]
			if rec.RequestSHA256 != digest([]byte(in)) || rec.ForwardSHA256 != rec.RequestSHA256 || rec.ForwardBytes != len(in) {
				t.Errorf("record %+v", rec)
			}
		})
	}
}

// TestCheckerFailuresFailClosed: a panicking checker refuses, a refusal that lands
// while another request is being checked stops that one too, and a client that
// leaves mid-check is not a verdict on the run.
func TestCheckerFailuresFailClosed(t *testing.T) {
	t.Run("panic", func(t *testing.T) {
		fm, root := newFake(t)
		conv := ConversationFunc(func(context.Context, *Request) ([]byte, error) { panic("secret prompt text") })
		var logs bytes.Buffer
		s := startBridge(t, Options{Upstream: newUpstream(t, Anthropic, root), Conversation: conv,
			Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: new(sync.Mutex)}, nil))})
		res, body := do(t, newReq(t, s, http.MethodPost, "/v1/messages", requestBody(Anthropic, false)))
		if _, msg, _ := errorShape(t, Anthropic, body); res.StatusCode != 400 || !strings.Contains(msg, "internal error") {
			t.Errorf("%d %s", res.StatusCode, body)
		}
		if s.Refusal() == nil || len(fm.Requests()) != 0 {
			t.Error("a panicking checker did not refuse, or something was forwarded")
		}
		if strings.Contains(logs.String(), "secret prompt text") || !strings.Contains(logs.String(), "panicked") {
			t.Errorf("log:\n%s", logs.String())
		}
	})

	t.Run("refusal during another check", func(t *testing.T) {
		fm, root := newFake(t)
		inA, refusedB := make(chan struct{}), make(chan struct{})
		conv := ConversationFunc(func(_ context.Context, req *Request) ([]byte, error) {
			if bytes.Contains(req.Body, []byte("request A")) {
				close(inA)
				<-refusedB // A passes its own check only after B was refused
				return req.Body, nil
			}
			return nil, Refuse("B does not match")
		})
		s := startBridge(t, Options{Upstream: newUpstream(t, Chat, root), Conversation: conv,
			OnRefusal: func(*Refusal) { close(refusedB) }})
		done := make(chan int)
		go func() {
			res, _ := do(t, newReq(t, s, http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":"request A"}]}`))
			done <- res.StatusCode
		}()
		<-inA
		do(t, newReq(t, s, http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":"request B"}]}`))
		if status := <-done; status != 400 || len(fm.Requests()) != 0 {
			t.Errorf("request A: status %d, %d upstream requests; want 400 and none", status, len(fm.Requests()))
		}
	})

	t.Run("client leaves during check", func(t *testing.T) {
		_, root := newFake(t)
		entered := make(chan struct{})
		conv := ConversationFunc(func(ctx context.Context, req *Request) ([]byte, error) {
			close(entered)
			<-ctx.Done()
			return nil, ctx.Err()
		})
		s := startBridge(t, Options{Upstream: newUpstream(t, Anthropic, root), Conversation: conv})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-entered; cancel() }()
		if _, err := client().Do(newReq(t, s, http.MethodPost, "/v1/messages", requestBody(Anthropic, false)).WithContext(ctx)); err == nil {
			t.Fatal("request succeeded")
		}
		s.Close()
		if s.Refusal() != nil || s.Records()[0].Outcome != OutcomeCanceled {
			t.Errorf("refusal %+v, record %+v", s.Refusal(), s.Records()[0])
		}
	})
}

func TestDefaultBodyCapIs32MiB(t *testing.T) {
	fm, root := newFake(t)
	s := startBridge(t, Options{Upstream: newUpstream(t, Anthropic, root)})
	for _, tc := range []struct {
		size int64
		want int
	}{
		{DefaultMaxBodyBytes + 1, 413},
		{DefaultMaxBodyBytes, 400}, // read whole and passed on: the fake model rejects the non-JSON body
	} {
		r := newReq(t, s, http.MethodPost, "/v1/messages", "")
		r.Body = io.NopCloser(io.LimitReader(zeros{}, tc.size))
		r.ContentLength = -1 // chunked: only the reader's cap can stop it
		if res, body := do(t, r); res.StatusCode != tc.want {
			t.Errorf("%d-byte body: status %d, want %d: %.200s", tc.size, res.StatusCode, tc.want, body)
		}
	}
	waitFor(t, func() bool { return len(fm.Requests()) == 1 })
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
