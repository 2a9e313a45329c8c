package translate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func chunk(s string) string { return "data: " + s + "\n\n" }

// TestStreamToAnthropicEdges covers what real servers do beyond fakemodel.
func TestStreamToAnthropicEdges(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    message
		wantErr string
		wantOut string // substring of the output when wantErr is set or the stream ends in an error event
	}{
		{"name after id, args before name, no call id, CRLF, no DONE",
			strings.ReplaceAll(chunk(`{"id":"chatcmpl-9","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}}]}`)+
				chunk(`{"id":"chatcmpl-9","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"Bash","arguments":":1}"}}]}}]}`)+
				chunk(`{"id":"chatcmpl-9","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`)+
				chunk(`{"id":"chatcmpl-9","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":6}}}`), "\n", "\r\n"),
			message{StopReason: "tool_use", Output: 4, Content: []block{{Type: "tool_use", ID: "toolu_9_0", Name: "Bash", Input: `{"a":1}`}}}, "", `"input_tokens":4,"cache_read_input_tokens":6`},
		{"length", ": ping\n\n" + chunk(`{"id":"c","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"length"}]}`) + ": ping\n\n" + "data: [DONE]\n\n",
			message{StopReason: "max_tokens", Content: []block{{Type: "text", Text: "Hi"}}}, "", "event: ping"},
		{"text after tool", chunk(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t","function":{"name":"A","arguments":"{}"}}]}}]}`) +
			chunk(`{"id":"c","choices":[{"index":0,"delta":{"content":"after"},"finish_reason":"tool_calls"}]}`) + "data: [DONE]\n\n",
			message{StopReason: "tool_use", Content: []block{{Type: "tool_use", ID: "t", Name: "A", Input: "{}"}, {Type: "text", Text: "after"}}}, "", ""},
		{"truncated", chunk(`{"id":"c","choices":[{"index":0,"delta":{"content":"Hi"}}]}`), message{}, "ended before a finish_reason", ""},
		{"empty", "", message{}, "ended before a finish_reason", ""},
		{"nameless call", chunk(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t"}]},"finish_reason":"tool_calls"}]}`) + "data: [DONE]\n\n",
			message{}, "never named tool call 0", ""},
		{"interleaved", chunk(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"A"}},{"index":1,"id":"b","function":{"name":"B"}}]}}]}`) +
			chunk(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}`),
			message{}, "interleaved", ""},
		{"not json", "data: {oops\n\n", message{}, "not a chat.completion.chunk", ""},
		{"error chunk", chunk(`{"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]}`) + chunk(`{"error":{"message":"overloaded","type":"server_error"}}`),
			message{}, "", `event: error` + "\n" + `data: {"error":{"message":"overloaded","type":"api_error"},"type":"error"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := StreamToAnthropic(&out, strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("StreamToAnthropic: %v", err)
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("output lacks %q:\n%s", tc.wantOut, out.String())
			}
			if strings.Contains(tc.wantOut, "event: error") {
				return
			}
			if d := cmp.Diff(tc.want, decodeSSE(t, &out)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestChatToMessage(t *testing.T) {
	got, err := ChatToMessage([]byte(`{"id":"chatcmpl-7","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,
		"tool_calls":[{"id":"c1","type":"function","function":{"name":"Read","arguments":"{ \"p\": 1 }"}}]},"finish_reason":"tool_calls"}],
		"usage":{"prompt_tokens":5,"completion_tokens":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"msg_7","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"c1","name":"Read","input":{"p":1}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"cache_read_input_tokens":0,"output_tokens":2}}`
	if d := cmp.Diff(want, string(got)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	for _, bad := range []struct{ body, want string }{
		{`[]`, "not a chat.completion"},
		{`{"choices":[]}`, "no choices[0].message"},
		{`{"error":{"message":"boom"}}`, "boom"},
		{`{"choices":[{"message":{"tool_calls":[{"function":{"name":"X","arguments":"[1]"}}]}}]}`, "not a JSON object"},
	} {
		if _, err := ChatToMessage([]byte(bad.body)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want %q", bad.body, err, bad.want)
		}
	}
}
