package fakemodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/tidwall/gjson"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

var fixedClock = func(s *Server) {
	WithClock(func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) })(s)
	WithIDSeed("")(s) // the golden ids
}

// wireReply exercises everything a reply can carry: reasoning, text long enough
// to be split into several deltas (with characters a JSON encoder likes to escape
// and a multi-byte rune), and two parallel calls.
var wireReply = Reply{
	Thinking: "The user wants a listing; run ls and read the README together.",
	Text:     "Looking at <the> project & its README — café first.",
	ToolCalls: []ToolCall{
		{Name: "Bash", Arguments: json.RawMessage(`{"command": "ls -A", "description": "List files"}`)},
		{Name: "Read", Arguments: json.RawMessage(`{"file_path":"/repo/README.md"}`)},
	},
}

func wireScript(p Protocol) Script {
	r := wireReply
	if p == Responses {
		r.ToolCalls = append(append([]ToolCall(nil), r.ToolCalls...), ToolCall{Type: "custom", Name: "apply_patch",
			Input: "*** Begin Patch\n*** Add File: NOTES.md\n+# Notes\n*** End Patch\n"})
	}
	return Script{Replies: []Reply{r}}
}

var wireRequests = map[Protocol]struct{ path, body string }{
	Anthropic: {"/v1/messages?beta=true", `{"model":"claude-test","max_tokens":1024,"tools":[{"name":"Bash","input_schema":{}}],` +
		`"messages":[{"role":"user","content":"list the files"}]`},
	Responses: {"/v1/responses", `{"model":"gpt-test","include":["reasoning.encrypted_content"],` +
		`"tools":[{"type":"function","name":"exec_command"}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]}]`},
	Chat: {"/v1/chat/completions", `{"model":"chat-test","stream_options":{"include_usage":true},` +
		`"tools":[{"type":"function","function":{"name":"bash"}}],"messages":[{"role":"user","content":"list the files"}]`},
}

// serveOnce answers one request from a fresh server and returns the raw body.
func serveOnce(t *testing.T, s *Server, path, body string) (*http.Response, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

func TestWireGolden(t *testing.T) {
	for _, p := range []Protocol{Anthropic, Responses, Chat} {
		for _, stream := range []bool{true, false} {
			name, ext := string(p), ".json"
			if stream {
				name, ext = name+"-stream", ".sse"
			}
			t.Run(name, func(t *testing.T) {
				req := wireRequests[p]
				body := req.body + fmt.Sprintf(`,"stream":%t}`, stream)
				res, got := serveOnce(t, New(wireScript(p), fixedClock), req.path, body)
				if res.StatusCode != http.StatusOK {
					t.Fatalf("status %d: %s", res.StatusCode, got)
				}
				wantType := "application/json"
				if stream {
					wantType = "text/event-stream; charset=utf-8"
				}
				if ct := res.Header.Get("Content-Type"); ct != wantType {
					t.Errorf("Content-Type = %q, want %q", ct, wantType)
				}

				decoded := decodeWire(t, p, stream, got)
				want := wireScript(p).Replies[0]
				if diff := cmp.Diff(normalize(want), normalize(decoded), cmpopts.IgnoreFields(ToolCall{}, "ID")); diff != "" {
					t.Errorf("decoded reply (-script +wire):\n%s", diff)
				}
				for _, c := range decoded.ToolCalls {
					if c.ID == "" {
						t.Errorf("call %s has no id", c.Name)
					}
				}

				golden := filepath.Join("testdata", "golden", name+ext)
				if *update {
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want2, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if !bytes.Equal(got, want2) {
					t.Errorf("bytes differ from %s (run go test -update after checking the diff):\n%s",
						golden, cmp.Diff(string(want2), string(got)))
				}
			})
		}
	}
}

// TestWireStreamAndJSONAgree checks that a retried request (same conversation)
// gets the same tool call ids whether it streams or not.
func TestWireStreamAndJSONAgree(t *testing.T) {
	for _, p := range []Protocol{Anthropic, Responses, Chat} {
		s := New(wireScript(p), fixedClock)
		req := wireRequests[p]
		_, a := serveOnce(t, s, req.path, req.body+`,"stream":true}`)
		_, b := serveOnce(t, s, req.path, req.body+`,"stream":false}`)
		ra, rb := decodeWire(t, p, true, a), decodeWire(t, p, false, b)
		if diff := cmp.Diff(ra, rb); diff != "" {
			t.Errorf("%s: stream and JSON replies differ (-stream +json):\n%s", p, diff)
		}
	}
}

func normalize(r Reply) Reply {
	out := r
	out.ToolCalls = nil
	for _, c := range r.ToolCalls {
		if !c.custom() {
			c.Arguments = json.RawMessage(c.args())
		}
		out.ToolCalls = append(out.ToolCalls, c)
	}
	return out
}

type sseEvent struct{ name, data string }

// parseSSE splits a stream into events, failing on anything that is not
// "event:"/"data:" lines separated by blank lines.
func parseSSE(t *testing.T, b []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	rd := bufio.NewReader(bytes.NewReader(b))
	for {
		line, err := rd.ReadString('\n')
		if err == io.EOF {
			if line != "" || cur != (sseEvent{}) {
				t.Fatalf("stream does not end with a blank line: %q", line)
			}
			return out
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if cur.data == "" {
				t.Fatalf("event without data after %d events", len(out))
			}
			out = append(out, cur)
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if cur.data != "" {
				t.Fatalf("two data lines in one event")
			}
			cur.data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
}

func decodeWire(t *testing.T, p Protocol, stream bool, b []byte) Reply {
	t.Helper()
	if !stream {
		if !gjson.ValidBytes(b) {
			t.Fatalf("not JSON: %s", b)
		}
		switch p {
		case Anthropic:
			return decodeAnthropicJSON(t, gjson.ParseBytes(b))
		case Responses:
			return decodeResponsesOutput(t, gjson.ParseBytes(b).Get("output"))
		default:
			return decodeChatJSON(t, gjson.ParseBytes(b))
		}
	}
	evs := parseSSE(t, b)
	switch p {
	case Anthropic:
		return decodeAnthropicStream(t, evs)
	case Responses:
		return decodeResponsesStream(t, evs)
	default:
		return decodeChatStream(t, evs)
	}
}

func decodeAnthropicJSON(t *testing.T, v gjson.Result) Reply {
	var r Reply
	v.Get("content").ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").String() {
		case "thinking":
			r.Thinking = b.Get("thinking").String()
		case "text":
			r.Text = b.Get("text").String()
		case "tool_use":
			r.ToolCalls = append(r.ToolCalls, ToolCall{ID: b.Get("id").String(), Name: b.Get("name").String(),
				Arguments: json.RawMessage(b.Get("input").Raw)})
		}
		return true
	})
	if want := stopFor(r, "tool_use", "end_turn"); v.Get("stop_reason").String() != want {
		t.Errorf("stop_reason = %s, want %s", v.Get("stop_reason"), want)
	}
	return r
}

func decodeAnthropicStream(t *testing.T, evs []sseEvent) Reply {
	var r Reply
	var names []string
	open, stop := -1, ""
	var partial strings.Builder
	for i, e := range evs {
		v := gjson.Parse(e.data)
		if v.Get("type").String() != e.name {
			t.Fatalf("event %d: name %q but type %q", i, e.name, v.Get("type"))
		}
		names = append(names, e.name)
		switch e.name {
		case "content_block_start":
			if open != -1 || int(v.Get("index").Int()) != countStarts(names)-1 {
				t.Fatalf("event %d: block %d starts while %d is open", i, v.Get("index").Int(), open)
			}
			open = int(v.Get("index").Int())
			if b := v.Get("content_block"); b.Get("type").String() == "tool_use" {
				r.ToolCalls = append(r.ToolCalls, ToolCall{ID: b.Get("id").String(), Name: b.Get("name").String()})
				partial.Reset()
			}
		case "content_block_delta":
			if int(v.Get("index").Int()) != open {
				t.Fatalf("event %d: delta for block %d while %d is open", i, v.Get("index").Int(), open)
			}
			d := v.Get("delta")
			switch d.Get("type").String() {
			case "thinking_delta":
				r.Thinking += d.Get("thinking").String()
			case "text_delta":
				r.Text += d.Get("text").String()
			case "input_json_delta":
				partial.WriteString(d.Get("partial_json").String())
			case "signature_delta":
				if d.Get("signature").String() == "" {
					t.Errorf("empty signature")
				}
			}
		case "content_block_stop":
			if n := len(r.ToolCalls); n > 0 && partial.Len() > 0 {
				r.ToolCalls[n-1].Arguments = json.RawMessage(partial.String())
				partial.Reset()
			}
			open = -1
		case "message_delta":
			stop = v.Get("delta.stop_reason").String()
		}
	}
	if want := stopFor(r, "tool_use", "end_turn"); stop != want {
		t.Errorf("stop_reason = %q, want %q", stop, want)
	}
	seq := strings.Join(names, " ")
	if !strings.HasPrefix(seq, "message_start content_block_start ping ") || !strings.HasSuffix(seq, " message_delta message_stop") {
		t.Errorf("event order %s", seq)
	}
	return r
}

func countStarts(names []string) int {
	n := 0
	for _, s := range names {
		if s == "content_block_start" {
			n++
		}
	}
	return n
}

func stopFor(r Reply, tools, done string) string {
	if len(r.ToolCalls) > 0 {
		return tools
	}
	return done
}

func decodeResponsesOutput(t *testing.T, output gjson.Result) Reply {
	var r Reply
	output.ForEach(func(_, it gjson.Result) bool {
		switch it.Get("type").String() {
		case "reasoning":
			r.Thinking = it.Get("summary.0.text").String()
			if it.Get("encrypted_content").String() == "" {
				t.Errorf("reasoning item without encrypted_content although the request included it")
			}
		case "message":
			r.Text = it.Get("content.0.text").String()
		case "function_call":
			r.ToolCalls = append(r.ToolCalls, ToolCall{ID: it.Get("call_id").String(), Name: it.Get("name").String(),
				Arguments: json.RawMessage(it.Get("arguments").String())})
		case "custom_tool_call":
			r.ToolCalls = append(r.ToolCalls, ToolCall{ID: it.Get("call_id").String(), Type: "custom",
				Name: it.Get("name").String(), Input: it.Get("input").String()})
		default:
			t.Errorf("unexpected output item %s", it.Raw)
		}
		return true
	})
	return r
}

func decodeResponsesStream(t *testing.T, evs []sseEvent) Reply {
	var done []string
	deltas := map[string]string{} // item id → concatenated deltas
	var completed gjson.Result
	for i, e := range evs {
		v := gjson.Parse(e.data)
		if v.Get("type").String() != e.name || int(v.Get("sequence_number").Int()) != i {
			t.Fatalf("event %d %q: type %s, sequence_number %d", i, e.name, v.Get("type"), v.Get("sequence_number").Int())
		}
		switch {
		case strings.HasSuffix(e.name, ".delta"):
			deltas[v.Get("item_id").String()] += v.Get("delta").String()
		case e.name == "response.output_item.done":
			it := v.Get("item")
			done = append(done, it.Raw)
			var full string
			switch it.Get("type").String() {
			case "reasoning":
				full = it.Get("summary.0.text").String()
			case "message":
				full = it.Get("content.0.text").String()
			case "function_call":
				full = it.Get("arguments").String()
			case "custom_tool_call":
				full = it.Get("input").String()
			}
			if got := deltas[it.Get("id").String()]; got != full {
				t.Errorf("%s deltas add up to %q, the done item says %q", it.Get("type"), got, full)
			}
		case e.name == "response.completed":
			completed = v.Get("response")
		}
	}
	if evs[0].name != "response.created" || evs[1].name != "response.in_progress" || !completed.Exists() {
		t.Fatalf("stream must open with response.created, response.in_progress and end with response.completed")
	}
	var out []string
	completed.Get("output").ForEach(func(_, it gjson.Result) bool { out = append(out, it.Raw); return true })
	if diff := cmp.Diff(done, out); diff != "" {
		t.Errorf("response.completed output differs from the output_item.done items:\n%s", diff)
	}
	if completed.Get("usage.total_tokens").Int() == 0 || completed.Get("status").String() != "completed" {
		t.Errorf("response.completed lacks usage or status: %s", completed.Raw)
	}
	return decodeResponsesOutput(t, completed.Get("output"))
}

func decodeChatJSON(t *testing.T, v gjson.Result) Reply {
	m := v.Get("choices.0.message")
	r := Reply{Thinking: m.Get("reasoning_content").String(), Text: m.Get("content").String()}
	m.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: c.Get("id").String(), Name: c.Get("function.name").String(),
			Arguments: json.RawMessage(c.Get("function.arguments").String())})
		return true
	})
	if want := stopFor(r, "tool_calls", "stop"); v.Get("choices.0.finish_reason").String() != want {
		t.Errorf("finish_reason = %s, want %s", v.Get("choices.0.finish_reason"), want)
	}
	return r
}

func decodeChatStream(t *testing.T, evs []sseEvent) Reply {
	if last := evs[len(evs)-1]; last.data != "[DONE]" {
		t.Fatalf("stream ends with %q, want [DONE]", last.data)
	}
	var r Reply
	args := map[int]*strings.Builder{}
	finish, usage := "", false
	for i, e := range evs[:len(evs)-1] {
		v := gjson.Parse(e.data)
		if e.name != "" || v.Get("object").String() != "chat.completion.chunk" {
			t.Fatalf("event %d is not a chat.completion.chunk: %s", i, e.data)
		}
		if v.Get("usage").IsObject() {
			usage = v.Get("choices.#").Int() == 0
			continue
		}
		d := v.Get("choices.0.delta")
		if i == 0 && d.Get("role").String() != "assistant" {
			t.Errorf("first chunk has no assistant role: %s", e.data)
		}
		r.Thinking += d.Get("reasoning_content").String()
		r.Text += d.Get("content").String()
		d.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
			idx := int(c.Get("index").Int())
			if c.Get("id").Exists() {
				if idx != len(r.ToolCalls) {
					t.Errorf("tool call index %d announced out of order", idx)
				}
				r.ToolCalls = append(r.ToolCalls, ToolCall{ID: c.Get("id").String(), Name: c.Get("function.name").String()})
				args[idx] = &strings.Builder{}
			}
			args[idx].WriteString(c.Get("function.arguments").String())
			return true
		})
		if f := v.Get("choices.0.finish_reason"); f.Type != gjson.Null {
			finish = f.String()
		}
	}
	for i := range r.ToolCalls {
		r.ToolCalls[i].Arguments = json.RawMessage(args[i].String())
	}
	if want := stopFor(r, "tool_calls", "stop"); finish != want {
		t.Errorf("finish_reason = %q, want %q", finish, want)
	}
	if !usage {
		t.Errorf("include_usage was requested but no usage chunk with empty choices came")
	}
	return r
}
