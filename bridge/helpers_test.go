package bridge

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/bridge/fakemodel"
)

// upstreamKey stands in for a real provider key; tests assert it never leaks.
const upstreamKey = "sk-upstream-SECRET-0123456789abcdef"

// fixedClock makes the fake model's answers byte-identical between two servers.
func fixedClock() time.Time { return time.Unix(1_800_000_000, 0) }

const testScript = `{"replies":[
	{"thinking":"Look first.","text":"Listing the files.","tool_calls":[
		{"name":"Bash","arguments":{"command":"ls -A"}},
		{"name":"Glob","arguments":{"pattern":"**/*.py"}}]},
	{"text":"Done: <b>&amp;</b> \u00e9 \u2713"}]}`

func newFake(t testing.TB) (*fakemodel.Server, string) {
	t.Helper()
	script, err := fakemodel.ParseScript([]byte(testScript))
	if err != nil {
		t.Fatal(err)
	}
	fm := fakemodel.New(script, fakemodel.WithClock(fixedClock), fakemodel.WithIDSeed(""))
	srv := httptest.NewServer(fm)
	t.Cleanup(srv.Close)
	return fm, srv.URL
}

// baseFor returns the base URL convention of p for a server at root.
func baseFor(p Protocol, root string) string {
	if p == Anthropic {
		return root
	}
	return root + "/v1"
}

func newUpstream(t testing.TB, p Protocol, root string) *HTTPUpstream {
	t.Helper()
	u, err := NewHTTPUpstream(UpstreamConfig{Protocol: p, BaseURL: baseFor(p, root), APIKey: upstreamKey})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func startBridge(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Conversation == nil {
		opts.Conversation = Passthrough
	}
	s, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// handlerUpstream serves h on a loopback test server and returns an upstream for it.
func handlerUpstream(t testing.TB, p Protocol, h http.HandlerFunc) *HTTPUpstream {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return newUpstream(t, p, srv.URL)
}

// pathFor is the bridge path a client posts to for p.
func pathFor(p Protocol) string {
	switch p {
	case Anthropic:
		return "/v1/messages"
	case Responses:
		return "/v1/responses"
	}
	return "/v1/chat/completions"
}

// requestBody is a minimal conversation in p's shape, with tools so the fake model
// serves its first scripted reply.
func requestBody(p Protocol, stream bool) string {
	s := map[bool]string{true: "true", false: "false"}[stream]
	switch p {
	case Anthropic:
		return `{"model":"claude-test","max_tokens":1024,"stream":` + s + `,"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"list files <system-reminder>x</system-reminder>"}]}`
	case Responses:
		return `{"model":"gpt-test","stream":` + s + `,"tools":[{"type":"function","name":"Bash"}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]}]}`
	}
	return `{"model":"chat-test","stream":` + s + `,"tools":[{"type":"function","function":{"name":"Bash"}}],"messages":[{"role":"user","content":"list files"}]}`
}

// client never pools connections across tests and never decompresses, so a test
// sees the raw bytes on the wire.
func client() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableCompression: true, Proxy: nil}}
}

// newReq builds a request to the bridge carrying its token as x-api-key.
func newReq(t testing.TB, s *Server, method, path, body string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, s.URL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("x-api-key", s.Token())
	r.Header.Set("Content-Type", "application/json")
	return r
}

func do(t testing.TB, r *http.Request) (*http.Response, []byte) {
	t.Helper()
	res, err := client().Do(r)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.URL.Path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read %s: %v", r.URL.Path, err)
	}
	return res, b
}

// errorShape decodes a provider error body into (type, message, code), failing the
// test when the body has neither protocol's shape.
func errorShape(t testing.TB, p Protocol, body []byte) (typ, msg, code string) {
	t.Helper()
	var v struct {
		Type  string `json:"type"`
		Error struct {
			Type    string  `json:"type"`
			Message string  `json:"message"`
			Code    *string `json:"code"`
			Param   any     `json:"param"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	if p == Anthropic && v.Type != "error" {
		t.Fatalf("anthropic error body lacks type:error: %s", body)
	}
	if p != Anthropic && v.Type != "" {
		t.Fatalf("openai error body has a top-level type: %s", body)
	}
	var keys struct{ Error map[string]any }
	_ = json.Unmarshal(body, &keys)
	if _, ok := keys.Error["code"]; p != Anthropic && !ok {
		t.Fatalf("openai error body lacks code: %s", body)
	}
	if v.Error.Code != nil {
		code = *v.Error.Code
	}
	return v.Error.Type, v.Error.Message, code
}

var protocols = []Protocol{Anthropic, Responses, Chat}
