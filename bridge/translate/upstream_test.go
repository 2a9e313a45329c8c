package translate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/fakemodel"
)

// block and message are what an Anthropic client rebuilds from the answer.
type block struct {
	Type  string
	Text  string
	ID    string
	Name  string
	Input string // compact JSON
}

type message struct {
	Content    []block
	StopReason string
	Output     int64
}

// decodeSSE rebuilds the message from Anthropic SSE and checks the event grammar a
// client relies on: message_start first, every delta inside its started block,
// blocks numbered in order, message_stop last.
func decodeSSE(t *testing.T, r io.Reader) message {
	t.Helper()
	var m message
	var partial []string
	open, started, stopped := -1, false, false
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	var name string
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			name = v
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		ev := gjson.Parse(data)
		if ev.Get("type").String() != name {
			t.Fatalf("event %q carries type %q", name, ev.Get("type"))
		}
		if stopped {
			t.Fatalf("%s after message_stop", name)
		}
		if !started && name != "message_start" {
			t.Fatalf("%s before message_start", name)
		}
		i := int(ev.Get("index").Int())
		switch name {
		case "message_start":
			started = true
		case "content_block_start":
			if open != -1 || i != len(m.Content) {
				t.Fatalf("block %d started with block %d open and %d blocks done", i, open, len(m.Content))
			}
			cb := ev.Get("content_block")
			m.Content = append(m.Content, block{Type: cb.Get("type").String(), ID: cb.Get("id").String(), Name: cb.Get("name").String()})
			partial = append(partial, "")
			open = i
		case "content_block_delta":
			if i != open {
				t.Fatalf("delta for block %d while %d is open", i, open)
			}
			d := ev.Get("delta")
			switch d.Get("type").String() {
			case "text_delta":
				m.Content[i].Text += d.Get("text").String()
			case "input_json_delta":
				partial[i] += d.Get("partial_json").String()
			}
		case "content_block_stop":
			if i != open {
				t.Fatalf("stop for block %d while %d is open", i, open)
			}
			if m.Content[i].Type == "tool_use" {
				var c bytes.Buffer
				if err := json.Compact(&c, []byte(or(partial[i], "{}"))); err != nil {
					t.Fatalf("tool input %q: %v", partial[i], err)
				}
				m.Content[i].Input = c.String()
			}
			open = -1
		case "message_delta":
			m.StopReason = ev.Get("delta.stop_reason").String()
			m.Output = ev.Get("usage.output_tokens").Int()
		case "message_stop":
			stopped = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read translated stream: %v", err)
	}
	if !stopped {
		t.Fatal("translated stream has no message_stop")
	}
	return m
}

func or(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// decodeJSON reads a non-streaming Anthropic message the same way.
func decodeJSON(t *testing.T, body []byte) message {
	t.Helper()
	msg := gjson.ParseBytes(body)
	if msg.Get("type").String() != "message" {
		t.Fatalf("not a message: %s", body)
	}
	var m message
	for _, b := range msg.Get("content").Array() {
		m.Content = append(m.Content, block{Type: b.Get("type").String(), Text: b.Get("text").String(),
			ID: b.Get("id").String(), Name: b.Get("name").String(), Input: b.Get("input").Raw})
	}
	m.StopReason, m.Output = msg.Get("stop_reason").String(), msg.Get("usage.output_tokens").Int()
	return m
}

func newFake(t *testing.T, script string, opts ...fakemodel.Option) (*fakemodel.Server, *ChatUpstream) {
	t.Helper()
	s, err := fakemodel.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	fm := fakemodel.New(s, opts...)
	srv := httptest.NewServer(fm)
	t.Cleanup(srv.Close)
	up, err := NewChatUpstream(bridge.UpstreamConfig{BaseURL: srv.URL + "/v1", APIKey: "sk-test"}, "served-model")
	if err != nil {
		t.Fatal(err)
	}
	return fm, up
}

func send(t *testing.T, up *ChatUpstream, body string) *http.Response {
	t.Helper()
	res, err := up.Send(context.Background(), &bridge.Request{Protocol: bridge.Anthropic, Route: bridge.RouteMessages,
		Path: "/v1/messages?beta=true", Header: http.Header{"Anthropic-Version": {"2023-06-01"}}, Body: []byte(body)})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

const script = `{"replies":[
	{"thinking":"plan","text":"Looking at two files at once.","tool_calls":[
		{"name":"Bash","arguments":{"command":"ls -la /work && echo \"done\""}},
		{"name":"Read","arguments":{"file_path":"/work/a.txt","limit":2000}}]},
	{"text":"Both files are there; the longer one has 3 lines."}]}`

const tools = `"tools":[{"name":"Bash","input_schema":{"type":"object"}},{"name":"Read","input_schema":{"type":"object"}}]`

func TestRoundTripThroughFakemodel(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			fm, up := newFake(t, script)
			first := fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":100,"stream":%v,%s,
				"messages":[{"role":"user","content":"Look at the files."}]}`, stream, tools)
			got := roundTrip(t, up, first, stream)
			if len(got.Content) != 3 {
				t.Fatalf("first answer has %d blocks, want text + 2 tool_use: %+v", len(got.Content), got)
			}
			ids := []string{got.Content[1].ID, got.Content[2].ID}
			want := message{StopReason: "tool_use", Output: got.Output, Content: []block{
				{Type: "text", Text: "Looking at two files at once."},
				{Type: "tool_use", ID: ids[0], Name: "Bash", Input: `{"command":"ls -la /work && echo \"done\""}`},
				{Type: "tool_use", ID: ids[1], Name: "Read", Input: `{"file_path":"/work/a.txt","limit":2000}`},
			}}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("first answer (-want +got):\n%s", d)
			}
			if ids[0] == "" || ids[0] == ids[1] || got.Output == 0 {
				t.Errorf("tool ids %q and output tokens %d: want distinct non-empty ids and usage", ids, got.Output)
			}

			// The agent runs both calls and sends the results back.
			second := fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":100,"stream":%v,%s,"messages":[
				{"role":"user","content":"Look at the files."},
				{"role":"assistant","content":[{"type":"text","text":"Looking at two files at once."},
					{"type":"tool_use","id":%q,"name":"Bash","input":{"command":"ls"}},
					{"type":"tool_use","id":%q,"name":"Read","input":{"file_path":"/work/a.txt"}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"a.txt"},
					{"type":"tool_result","tool_use_id":%q,"content":[{"type":"text","text":"1\n2\n3"}]}]}]}`,
				stream, tools, ids[0], ids[1], ids[0], ids[1])
			got = roundTrip(t, up, second, stream)
			want = message{StopReason: "end_turn", Output: got.Output,
				Content: []block{{Type: "text", Text: "Both files are there; the longer one has 3 lines."}}}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("final answer (-want +got):\n%s", d)
			}

			// The fake model records a request after its handler returns, which can
			// be just after the client has read message_stop.
			reqs := fm.Requests()
			for deadline := time.Now().Add(5 * time.Second); len(reqs) < 2 && time.Now().Before(deadline); reqs = fm.Requests() {
				time.Sleep(5 * time.Millisecond)
			}
			if len(reqs) != 2 || reqs[1].Reply != 1 || reqs[1].Path != "/v1/chat/completions" {
				t.Fatalf("fake model saw %+v, want two main requests on /v1/chat/completions", reqs)
			}
			sent := gjson.ParseBytes(reqs[1].Body)
			var roles []string
			for _, m := range sent.Get("messages").Array() {
				roles = append(roles, m.Get("role").String()+":"+m.Get("tool_call_id").String())
			}
			if d := cmp.Diff([]string{"user:", "assistant:", "tool:" + ids[0], "tool:" + ids[1]}, roles); d != "" {
				t.Errorf("messages sent upstream (-want +got):\n%s", d)
			}
			if m := sent.Get("model").String(); m != "served-model" {
				t.Errorf("model sent upstream = %q", m)
			}
			if h := reqs[1].Header["anthropic-version"]; h != nil {
				t.Errorf("anthropic headers leaked upstream: %v", h)
			}
		})
	}
}

func roundTrip(t *testing.T, up *ChatUpstream, body string, stream bool) message {
	t.Helper()
	res := send(t, up, body)
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	if !stream {
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return decodeJSON(t, b)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type %q", ct)
	}
	return decodeSSE(t, res.Body)
}

// TestFirstByteBeforeUpstreamEnds holds the upstream after its first text chunk:
// the translated message_start and text delta must already be readable.
func TestFirstByteBeforeUpstreamEnds(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"chatcmpl-1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	defer close(release)
	up, err := NewChatUpstream(bridge.UpstreamConfig{BaseURL: srv.URL}, "m")
	if err != nil {
		t.Fatal(err)
	}
	res := send(t, up, `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	got := make(chan string, 1)
	go func() {
		br := bufio.NewReader(res.Body)
		var seen strings.Builder
		for !strings.Contains(seen.String(), `"text":"Hel"`) {
			line, err := br.ReadString('\n')
			seen.WriteString(line)
			if err != nil {
				break
			}
		}
		got <- seen.String()
	}()
	select {
	case s := <-got:
		if !strings.Contains(s, "event: message_start") || !strings.Contains(s, `"text":"Hel"`) {
			t.Errorf("first events = %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no translated bytes while the upstream was still streaming")
	}
}

// TestCancelStopsUpstream: the client going away must end the upstream request.
func TestCancelStopsUpstream(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": keep-alive\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	defer srv.Close()
	up, err := NewChatUpstream(bridge.UpstreamConfig{BaseURL: srv.URL}, "m")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res, err := up.Send(ctx, &bridge.Request{Protocol: bridge.Anthropic, Route: bridge.RouteMessages,
		Body: []byte(`{"stream":true,"messages":[]}`)})
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(res.Body)
	if line, _ := br.ReadString('\n'); line != ": keep-alive\n" {
		t.Errorf("keep-alive comment before any chunk became %q, want a comment", line)
	}
	cancel()
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("upstream request still running after cancellation")
	}
	if _, err := io.ReadAll(br); err == nil {
		t.Error("a cancelled stream read as complete")
	}
	res.Body.Close()
}

func TestErrorPassThrough(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		wantType   string
		wantMsg    string
		wantHeader map[string]string
	}{
		{"rate limit", 429, map[string]string{"Retry-After": "7"}, `{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`,
			"rate_limit_error", "slow down", map[string]string{"Retry-After": "7"}},
		{"vllm bad request", 400, nil, `{"object":"error","message":"max_tokens is too large","type":"BadRequestError","code":400}`,
			"invalid_request_error", "max_tokens is too large", nil},
		{"fastapi detail", 422, nil, `{"detail":"field required"}`, "invalid_request_error", "field required", nil},
		{"overloaded", 503, nil, `upstream connect error`, "overloaded_error", "upstream connect error", nil},
		{"server error", 500, map[string]string{"X-Request-Id": "r1"}, ``, "api_error", "Internal Server Error", map[string]string{"Request-Id": "r1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			up, err := NewChatUpstream(bridge.UpstreamConfig{BaseURL: srv.URL}, "m")
			if err != nil {
				t.Fatal(err)
			}
			res := send(t, up, `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			b, _ := io.ReadAll(res.Body)
			e := gjson.ParseBytes(b)
			if res.StatusCode != tc.status || e.Get("type").String() != "error" || e.Get("error.type").String() != tc.wantType ||
				!strings.Contains(e.Get("error.message").String(), tc.wantMsg) {
				t.Errorf("got %d %s, want %d with %s %q", res.StatusCode, b, tc.status, tc.wantType, tc.wantMsg)
			}
			for k, v := range tc.wantHeader {
				if got := res.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}

	// The fake model's own refusal (a conversation shorter than its offset).
	_, up := newFake(t, script, fakemodel.WithReplyOffset(3))
	res := send(t, up, `{"stream":true,`+tools+`,"messages":[{"role":"user","content":"hi"}]}`)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 400 || gjson.GetBytes(b, "error.type").String() != "invalid_request_error" ||
		res.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("fakemodel refusal became %d %v %s", res.StatusCode, res.Header, b)
	}
}

func TestSendRefusals(t *testing.T) {
	_, up := newFake(t, script)
	if up.Accepts(bridge.Chat) || !up.Accepts(bridge.Anthropic) {
		t.Error("Accepts: want Anthropic only")
	}
	res := send(t, up, `{"messages":[{"role":"user","content":[{"type":"image"}]}]}`)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 400 || !strings.Contains(string(b), "openai-chat upstream cannot carry") {
		t.Errorf("image request: %d %s", res.StatusCode, b)
	}
	res, err := up.Send(context.Background(), &bridge.Request{Protocol: bridge.Anthropic, Route: bridge.RouteCountTokens, Body: []byte(`{}`)})
	if err != nil || res.StatusCode != 404 {
		t.Errorf("count_tokens: %v %v", res, err)
	}
	if _, err := up.Send(context.Background(), &bridge.Request{Protocol: bridge.Chat}); err == nil {
		t.Error("a Chat request was sent")
	}
}
