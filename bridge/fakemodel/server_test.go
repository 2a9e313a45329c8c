package fakemodel

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
)

func do(t *testing.T, s *Server, method, path, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

func last(s *Server) Request {
	r := s.Requests()
	return r[len(r)-1]
}

var turnScript = Script{Replies: []Reply{
	{ToolCalls: []ToolCall{{Name: "a"}, {Name: "b"}}},
	{ToolCalls: []ToolCall{{Name: "c"}}},
	{Text: "finished"},
}}

func TestTurnSelection(t *testing.T) {
	const (
		antTools  = `"tools":[{"name":"Bash"}]`
		chatTools = `"tools":[{"type":"function","function":{"name":"bash"}}]`
		respTools = `"tools":[{"type":"function","name":"exec_command"}]`
	)
	user := `{"role":"user","content":"go"}`
	asst := `{"role":"assistant","content":"x"}`
	for _, tc := range []struct {
		name, path, body string
		kind             string
		turn, reply      int
		text             string // expected visible text of side/final answers
	}{
		{"anthropic first turn", "/v1/messages", `{` + antTools + `,"messages":[` + user + `]}`, KindMain, 0, 0, ""},
		{"anthropic second turn, system messages ignored", "/v1/messages",
			`{` + antTools + `,"messages":[` + user + `,{"role":"system","content":"skills"},` + asst + `,` + user + `]}`, KindMain, 1, 1, ""},
		{"anthropic past the script", "/v1/messages",
			`{` + antTools + `,"messages":[` + user + `,` + asst + `,` + user + `,` + asst + `,` + user + `,` + asst + `,` + user + `]}`, KindFinal, 3, -1, "Done."},
		{"anthropic title call without tools", "/v1/messages",
			`{"messages":[` + user + `,` + asst + `,` + user + `]}`, KindSide, 1, -1, "Scripted side reply."},
		{"anthropic empty tool list", "/v1/messages", `{"tools":[],"messages":[` + user + `]}`, KindSide, 0, -1, "Scripted side reply."},
		{"chat with parallel results", "/v1/chat/completions", `{` + chatTools + `,"messages":[{"role":"system","content":"s"},` + user +
			`,{"role":"assistant","content":null,"tool_calls":[{"id":"1"},{"id":"2"}]},{"role":"tool","tool_call_id":"1"},{"role":"tool","tool_call_id":"2"}]}`,
			KindMain, 1, 1, ""},
		{"responses string input", "/v1/responses", `{` + respTools + `,"input":"go"}`, KindMain, 0, 0, ""},
		{"responses parallel calls form one turn", "/v1/responses", `{` + respTools + `,"input":[
			{"type":"message","role":"user","content":[]},
			{"type":"reasoning","summary":[]},{"type":"function_call","call_id":"1"},{"type":"function_call","call_id":"2"},
			{"type":"function_call_output","call_id":"1"},{"type":"function_call_output","call_id":"2"}]}`, KindMain, 1, 1, ""},
		{"responses text then calls in one turn, custom call in the next", "/v1/responses", `{` + respTools + `,"input":[
			{"type":"message","role":"user","content":[]},
			{"type":"message","role":"assistant","content":[]},{"type":"function_call","call_id":"1"},{"type":"function_call_output","call_id":"1"},
			{"type":"custom_tool_call","call_id":"2"},{"type":"custom_tool_call_output","call_id":"2"},
			{"role":"user","content":[]}]}`, KindMain, 2, 2, ""},
		{"responses items without type (pi)", "/v1/responses", `{` + respTools + `,"input":[
			{"role":"user","content":[]},{"role":"assistant","content":[]},{"role":"user","content":[]}]}`, KindMain, 1, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(turnScript, WithReplyOffset(0)) // count every turn
			// Twice: a retried request must get the same answer.
			for i := 0; i < 2; i++ {
				res, body := do(t, s, http.MethodPost, tc.path, tc.body)
				if res.StatusCode != http.StatusOK {
					t.Fatalf("status %d: %s", res.StatusCode, body)
				}
				got := last(s)
				if got.Kind != tc.kind || got.Turn != tc.turn || got.Reply != tc.reply {
					t.Errorf("try %d: kind %s turn %d reply %d, want %s %d %d", i, got.Kind, got.Turn, got.Reply, tc.kind, tc.turn, tc.reply)
				}
				if tc.text != "" {
					if text := gjson.GetBytes(body, "content.0.text").String(); text != tc.text {
						t.Errorf("answer text %q, want %q", text, tc.text)
					}
				}
			}
		})
	}
}

func TestFinalAndSideTextsFromScript(t *testing.T) {
	s := New(Script{Final: "all done", Side: "A title"})
	_, body := do(t, s, http.MethodPost, "/v1/chat/completions", `{"tools":[{"type":"function"}],"messages":[]}`)
	if got := gjson.GetBytes(body, "choices.0.message.content").String(); got != "all done" {
		t.Errorf("final text %q", got)
	}
	_, body = do(t, s, http.MethodPost, "/v1/chat/completions", `{"messages":[]}`)
	if got := gjson.GetBytes(body, "choices.0.message.content").String(); got != "A title" {
		t.Errorf("side text %q", got)
	}
}

// TestTextActions: with text_actions a tool-less request takes the script's
// replies in turn (mini-swe-agent 1.x sends no tools), not the side text.
func TestTextActions(t *testing.T) {
	s := New(Script{TextActions: true, Replies: []Reply{{Text: "```bash\nls\n```"}, {Text: "second"}}})
	for _, tc := range []struct{ body, want string }{
		{`{"messages":[{"role":"user","content":"go"}]}`, "```bash\nls\n```"},
		{`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"x"},{"role":"user","content":"out"}]}`, "second"},
	} {
		_, body := do(t, s, http.MethodPost, "/v1/chat/completions", tc.body)
		if got := gjson.GetBytes(body, "choices.0.message.content").String(); got != tc.want {
			t.Errorf("reply %q, want %q", got, tc.want)
		}
	}
	for _, q := range s.Requests() {
		if q.Kind != KindMain {
			t.Errorf("request %d is %s, want %s", q.Seq, q.Kind, KindMain)
		}
	}
}

func TestSideCallStructuredOutput(t *testing.T) {
	schema := `{"type":"object","properties":{"title":{"type":"string"},"n":{"type":"integer"},"ok":{"type":"boolean"},"tags":{"type":"array"}}}`
	want := `{"title":"Scripted side reply.","n":0,"ok":false,"tags":[]}`
	for _, tc := range []struct{ name, path, body, textPath string }{
		{"anthropic output_config", "/v1/messages", `{"tools":[],"output_config":{"format":{"type":"json_schema","schema":` + schema + `}},"messages":[]}`, "content.0.text"},
		{"responses text.format", "/v1/responses", `{"text":{"format":{"type":"json_schema","name":"t","schema":` + schema + `}},"input":"x"}`, "output.0.content.0.text"},
		{"chat response_format", "/v1/chat/completions", `{"response_format":{"type":"json_schema","json_schema":{"name":"t","schema":` + schema + `}},"messages":[]}`, "choices.0.message.content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, body := do(t, New(Script{}), http.MethodPost, tc.path, tc.body)
			if got := gjson.GetBytes(body, tc.textPath).String(); got != want {
				t.Errorf("side answer %s, want %s", got, want)
			}
		})
	}
}

func TestRoutes(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		kind                     string
		check                    func(t *testing.T, body []byte)
	}{
		{"head root", http.MethodHead, "/", "", 200, KindProbe, nil},
		{"head api hello", http.MethodHead, "/api/hello", "", 200, KindProbe, nil},
		{"models", http.MethodGet, "/v1/models", "", 200, KindModels, func(t *testing.T, b []byte) {
			if ids := gjson.GetBytes(b, "data.#.id").String(); ids != `["fake-model"]` || gjson.GetBytes(b, "data.0.type").String() != "model" ||
				gjson.GetBytes(b, "data.0.object").String() != "model" || gjson.GetBytes(b, "last_id").String() != "fake-model" {
				t.Errorf("models list %s", b)
			}
		}},
		{"count tokens", http.MethodPost, "/v1/messages/count_tokens", `{"messages":[{"role":"user","content":"12345678"}]}`, 200, KindCountTokens,
			func(t *testing.T, b []byte) {
				if gjson.GetBytes(b, "input_tokens").Int() < 1 {
					t.Errorf("count_tokens answer %s", b)
				}
			}},
		{"messages without /v1", http.MethodPost, "/messages", `{"tools":[{"name":"x"}],"messages":[]}`, 200, KindMain, nil},
		{"wrong method", http.MethodGet, "/v1/messages", "", 404, KindUnknown, nil},
		{"unknown path", http.MethodPost, "/v1/embeddings", `{}`, 404, KindUnknown, func(t *testing.T, b []byte) {
			if !strings.Contains(gjson.GetBytes(b, "error.message").String(), "/v1/embeddings") {
				t.Errorf("404 body does not name the path: %s", b)
			}
		}},
		{"not json", http.MethodPost, "/v1/responses", `{"input":`, 400, KindInvalid, nil},
		{"json array", http.MethodPost, "/v1/chat/completions", `[]`, 400, KindInvalid, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Script{Replies: []Reply{{Text: "hi"}}})
			res, body := do(t, s, tc.method, tc.path, tc.body)
			if res.StatusCode != tc.status {
				t.Errorf("status %d, want %d (%s)", res.StatusCode, tc.status, body)
			}
			if got := last(s); got.Kind != tc.kind || got.Status != tc.status {
				t.Errorf("recorded kind %s status %d, want %s %d", got.Kind, got.Status, tc.kind, tc.status)
			}
			if tc.check != nil {
				tc.check(t, body)
			}
		})
	}
}

func TestCustomCallOutsideResponsesIsRefused(t *testing.T) {
	s := New(Script{Replies: []Reply{{ToolCalls: []ToolCall{{Type: "custom", Name: "apply_patch", Input: "x"}}}}})
	for _, tc := range []struct{ path, body, msgPath string }{
		{"/v1/messages", `{"tools":[{"name":"x"}],"messages":[]}`, "error.message"},
		{"/v1/chat/completions", `{"tools":[{"type":"function"}],"messages":[]}`, "error.message"},
	} {
		res, body := do(t, s, http.MethodPost, tc.path, tc.body)
		if res.StatusCode != 400 || res.Header.Get("x-should-retry") != "false" ||
			!strings.Contains(gjson.GetBytes(body, tc.msgPath).String(), `custom tool "apply_patch"`) {
			t.Errorf("%s: status %d, x-should-retry %q, body %s", tc.path, res.StatusCode, res.Header.Get("x-should-retry"), body)
		}
		if last(s).Kind != KindInvalid {
			t.Errorf("%s recorded as %s", tc.path, last(s).Kind)
		}
	}
	if res, body := do(t, s, http.MethodPost, "/v1/responses", `{"tools":[{"type":"custom"}],"input":"x"}`); res.StatusCode != 200 {
		t.Errorf("Responses refused a custom call: %d %s", res.StatusCode, body)
	}
}

func TestRequestBodyEncodings(t *testing.T) {
	s := New(Script{Replies: []Reply{{Text: "hi"}}})
	body := `{"tools":[{"type":"function"}],"input":"x"}`
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(body))
	zw.Close()
	res, out := do(t, s, http.MethodPost, "/v1/responses", gz.String(), "Content-Encoding", "gzip")
	if res.StatusCode != 200 || string(last(s).Body) != body {
		t.Errorf("gzip body: status %d %s, recorded %s", res.StatusCode, out, last(s).Body)
	}
	res, out = do(t, s, http.MethodPost, "/v1/responses", "\x28\xb5\x2f\xfd", "Content-Encoding", "zstd")
	if res.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(string(out), "enable_request_compression=false") {
		t.Errorf("zstd body: status %d %s", res.StatusCode, out)
	}
	res, _ = do(t, s, http.MethodPost, "/v1/responses", strings.Repeat(" ", maxBody+1))
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: status %d", res.StatusCode)
	}
	res, out = do(t, s, http.MethodPost, "/v1/responses", "not gzip", "Content-Encoding", "gzip")
	if res.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(string(out), "gzip") {
		t.Errorf("broken gzip body: status %d %s", res.StatusCode, out)
	}
}

func TestRequestLog(t *testing.T) {
	var logBuf bytes.Buffer
	s := New(Script{Replies: []Reply{{Text: "hi"}}}, WithLog(&logBuf), fixedClock)
	body := `{"model":"m","stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"<hi>"}]}`
	do(t, s, http.MethodPost, "/v1/messages?beta=true", body,
		"Authorization", "Bearer secret", "X-Api-Key", "secret", "Cookie", "a=b", "X-Run-Token", "secret",
		"Anthropic-Beta", "claude-code-20250219", "User-Agent", "claude-cli/2.1.197")
	do(t, s, http.MethodPost, "/v1/nowhere", "plain text")

	reqs := s.Requests()
	want := []Request{
		{Seq: 0, Time: reqs[0].Time, Method: "POST", Path: "/v1/messages?beta=true",
			Header: map[string][]string{"anthropic-beta": {"claude-code-20250219"}, "user-agent": {"claude-cli/2.1.197"}},
			Body:   json.RawMessage(body), Protocol: Anthropic, Kind: KindMain, Stream: true, Turn: 0, Reply: 0, Status: 200},
		{Seq: 1, Time: reqs[1].Time, Method: "POST", Path: "/v1/nowhere", Header: map[string][]string{},
			BodyText: "plain text", Kind: KindUnknown, Reply: -1, Status: 404},
	}
	if diff := cmp.Diff(want, reqs); diff != "" {
		t.Errorf("recorded requests (-want +got):\n%s", diff)
	}
	if strings.Contains(logBuf.String(), "secret") {
		t.Errorf("a credential reached the log:\n%s", logBuf.String())
	}
	var fromLog []Request
	sc := bufio.NewScanner(&logBuf)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		fromLog = append(fromLog, r)
	}
	if diff := cmp.Diff(reqs, fromLog); diff != "" {
		t.Errorf("JSONL log differs from Requests() (-memory +log):\n%s", diff)
	}
	if err := s.LogErr(); err != nil {
		t.Errorf("LogErr = %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestLogErrIsSticky(t *testing.T) {
	s := New(Script{}, WithLog(failWriter{}))
	do(t, s, http.MethodHead, "/", "")
	do(t, s, http.MethodHead, "/", "")
	if err := s.LogErr(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("LogErr = %v, want the write failure", err)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests kept in memory after a log failure, want 2", n)
	}
}

func TestConcurrentRequests(t *testing.T) {
	s := New(turnScript)
	srv := httptest.NewServer(s)
	defer srv.Close()
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := http.Post(srv.URL+"/v1/responses", "application/json",
				strings.NewReader(`{"stream":true,"tools":[{"type":"function"}],"input":"x"}`))
			if err != nil {
				errs <- err
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if !bytes.Contains(b, []byte("response.completed")) {
				errs <- fmt.Errorf("incomplete stream: %s", b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	reqs := s.Requests()
	for i, r := range reqs {
		if r.Seq != i || r.Reply != 0 {
			t.Errorf("request %d: seq %d reply %d", i, r.Seq, r.Reply)
		}
	}
	if len(reqs) != n {
		t.Errorf("%d requests recorded, want %d", len(reqs), n)
	}
}

func TestListenAndServe(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, []byte(`{"replies":[{"text":"hello from {CWD}"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ListenAndServe("127.0.0.1:0", filepath.Join(dir, "missing.json"), ""); err == nil {
		t.Error("a missing script was accepted")
	}
	if err := ListenAndServe("127.0.0.1:0", script, filepath.Join(dir, "no", "such", "log.jsonl")); err == nil {
		t.Error("an unwritable log path was accepted")
	}
	if err := ListenAndServe("127.0.0.1:-1", script, ""); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("bad address: %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logPath := filepath.Join(dir, "requests.jsonl")
	go ListenAndServe(addr, script, logPath) // runs until the test binary exits
	var body []byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		res, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"tools":[{"type":"function"}],"messages":[]}`))
		if err != nil {
			continue
		}
		body, _ = io.ReadAll(res.Body)
		res.Body.Close()
		break
	}
	wd, _ := os.Getwd()
	if got := gjson.GetBytes(body, "choices.0.message.content").String(); got != "hello from "+wd {
		t.Fatalf("served %q (%s), want the scripted reply", got, body)
	}
	logged, err := os.ReadFile(logPath)
	if err != nil || gjson.GetBytes(logged, "kind").String() != KindMain {
		t.Errorf("request log %q (%v)", logged, err)
	}
}

func TestScriptedCallIDsAreKept(t *testing.T) {
	s := New(Script{Replies: []Reply{{ToolCalls: []ToolCall{{ID: "call_given", Name: "x"}}}}})
	for _, tc := range []struct{ path, body, idPath string }{
		{"/v1/messages", `{"tools":[{"name":"x"}],"messages":[]}`, "content.0.id"},
		{"/v1/chat/completions", `{"tools":[{"type":"function"}],"messages":[]}`, "choices.0.message.tool_calls.0.id"},
		{"/v1/responses", `{"tools":[{"type":"function"}],"input":"x"}`, "output.0.call_id"},
	} {
		if _, body := do(t, s, http.MethodPost, tc.path, tc.body); gjson.GetBytes(body, tc.idPath).String() != "call_given" {
			t.Errorf("%s: scripted id not used: %s", tc.path, body)
		}
	}
}

// brokenWriter accepts the headers and fails every body write, like a client that
// hung up.
type brokenWriter struct{ h http.Header }

func (w *brokenWriter) Header() http.Header       { return w.h }
func (w *brokenWriter) WriteHeader(int)           {}
func (w *brokenWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestClientGoneIsRecorded(t *testing.T) {
	for _, p := range []Protocol{Anthropic, Responses, Chat} {
		s := New(wireScript(p))
		req := wireRequests[p]
		s.ServeHTTP(&brokenWriter{h: http.Header{}}, httptest.NewRequest(http.MethodPost, req.path,
			strings.NewReader(req.body+`,"stream":true}`)))
		if got := last(s); got.Error != "broken pipe" || got.Kind != KindMain {
			t.Errorf("%s: recorded %+v, want the write error", p, got)
		}
	}
}

// A script served with an offset starts after the turns a resumed session
// already holds, and a seed keeps its generated ids apart from an unseeded
// server's (the one that answered the recorded turns).
func TestReplyOffsetAndIDSeed(t *testing.T) {
	const tools = `"tools":[{"type":"function","name":"exec_command"}]`
	turns := func(n int) string {
		items := []string{`{"type":"message","role":"user","content":[]}`}
		for i := 0; i < n; i++ {
			items = append(items, `{"type":"function_call","call_id":"c`+fmt.Sprint(i)+`"}`,
				`{"type":"function_call_output","call_id":"c`+fmt.Sprint(i)+`"}`)
		}
		return `{` + tools + `,"input":[` + strings.Join(items, ",") + `]}`
	}
	for _, tc := range []struct {
		turns       int
		kind        string
		reply, code int
	}{
		{1, KindInvalid, -1, 400},
		{2, KindMain, 0, 200},
		{3, KindMain, 1, 200},
		{5, KindFinal, -1, 200},
	} {
		s := New(turnScript, WithReplyOffset(2))
		res, body := do(t, s, "POST", "/v1/responses", turns(tc.turns))
		got := last(s)
		if res.StatusCode != tc.code || got.Kind != tc.kind || got.Reply != tc.reply || got.Turn != tc.turns {
			t.Errorf("%d turns: status %d kind %s reply %d turn %d, want %d %s %d %d\n%s",
				tc.turns, res.StatusCode, got.Kind, got.Reply, got.Turn, tc.code, tc.kind, tc.reply, tc.turns, body)
		}
		if n := AssistantTurns(Responses, []byte(turns(tc.turns))); n != tc.turns {
			t.Errorf("AssistantTurns = %d, want %d", n, tc.turns)
		}
	}

	ids := func(opts ...Option) []string {
		_, body := do(t, New(turnScript, opts...), "POST", "/v1/responses", turns(0))
		return []string{gjson.GetBytes(body, "output.0.id").Str, gjson.GetBytes(body, "output.0.call_id").Str, gjson.GetBytes(body, "id").Str}
	}
	plain, seeded, again := ids(WithIDSeed("")), ids(WithIDSeed("run-1")), ids(WithIDSeed("run-1"))
	for i := range plain {
		if plain[i] == "" || plain[i] == seeded[i] {
			t.Errorf("id %d: unseeded %q, seeded %q: the seed must change it", i, plain[i], seeded[i])
		}
	}
	if d := cmp.Diff(seeded, again); d != "" {
		t.Errorf("seeded ids are not deterministic:\n%s", d)
	}
}
