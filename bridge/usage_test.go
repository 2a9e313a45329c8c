package bridge

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUsageTap reads the usage of each protocol's answers, streamed and
// not, written to the tap in awkward pieces, as relay would.
func TestUsageTap(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       *Usage
	}{
		{"anthropic stream", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":90,\"output_tokens\":1}}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":42}}\n\n",
			&Usage{InputTokens: 100, CachedInputTokens: 90, OutputTokens: 42, Responses: 1}},
		{"anthropic json", "{\n  \"type\": \"message\",\n  \"usage\": {\"input_tokens\": 7, \"output_tokens\": 3}\n}",
			&Usage{InputTokens: 7, OutputTokens: 3, Responses: 1}},
		{"responses stream", "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\n\n" +
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":50,\"input_tokens_details\":{\"cached_tokens\":20},\"output_tokens\":5}}}\n\n",
			&Usage{InputTokens: 50, CachedInputTokens: 20, OutputTokens: 5, Responses: 1}},
		{"chat stream", "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":4,\"prompt_tokens_details\":{\"cached_tokens\":2}}}\n\ndata: [DONE]\n\n",
			&Usage{InputTokens: 12, CachedInputTokens: 2, OutputTokens: 4, Responses: 1}},
		{"leading blank lines", "\n\r\n{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}",
			&Usage{InputTokens: 3, OutputTokens: 1, Responses: 1}},
		{"event line cut, data line after", "event: " + strings.Repeat("e", 5000) + "\ndata: {\"usage\":{\"output_tokens\":9}}\n",
			&Usage{OutputTokens: 9, Responses: 1}},
		{"long data line that is not JSON, cut", "data: " + strings.Repeat("x", 5000) + "\ndata: {\"usage\":{\"output_tokens\":9}}\n",
			&Usage{OutputTokens: 9, Responses: 1}},
		{"data line cut inside its prefix", "dat" + "a:  {\"usage\":{\"output_tokens\":2}}\n", &Usage{OutputTokens: 2, Responses: 1}},
		{"no usage", "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n", nil},
		{"oversized line", "data: {\"usage\":{\"output_tokens\":1},\"pad\":\"" + strings.Repeat("x", usageLineMax) + "\"}\n", nil},
	} {
		// Lines cut anywhere, cut rarely, and never (each read in place).
		for _, piece := range []int{1, 7, 4096, len(tc.body)} {
			t.Run(fmt.Sprintf("%s/pieces-%d", tc.name, piece), func(t *testing.T) {
				tap := &usageTap{}
				for b := []byte(tc.body); len(b) > 0; {
					n := min(len(b), piece)
					tap.Write(b[:n])
					b = b[n:]
				}
				if d := cmp.Diff(tc.want, tap.result()); d != "" {
					t.Errorf("usage (-want +got):\n%s", d)
				}
			})
		}
	}
}

// TestUsageTapHoldsOnlyWhatMayBeJSON: a cut line is copied only while it can
// still be an event with usage; other lines are dropped where they are cut.
func TestUsageTapHoldsOnlyWhatMayBeJSON(t *testing.T) {
	for _, tc := range []struct {
		start string
		held  bool
	}{
		{"data: xxxx", false},
		{"data:", true},
		{"data:  ", true},
		{"data: {\"type\"", true},
		{"  {\"usage\"", true},
		{"da", true},
		{"dx", false},
		{"event: message_delta", false},
		{": ping", false},
	} {
		tap := &usageTap{}
		tap.Write([]byte("data: {}\n" + tc.start))
		if held := len(tap.line) > 0; held != tc.held {
			t.Errorf("%q: held %v, want %v", tc.start, held, tc.held)
		}
	}
}

func TestEndsStream(t *testing.T) {
	for v, want := range map[string]bool{
		`[DONE]`:                  true,
		`{"type":"message_stop"}`: true,
		`{"type":"response.completed","response":{"id":"r"}}`:              true,
		`{"type":"response.incomplete"}`:                                   true,
		`{"type":"response.failed"}`:                                       true,
		`{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`:          true,
		`{"choices":[{"delta":{"content":"x"},"finish_reason":null}]}`:     false,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`:      false,
		`{"type":"response.created"}`:                                      false,
		`{"type":"response.output_text.delta","delta":"\"message_stop\""}`: false,
		`[DONE`: false,
		``:      false,
	} {
		if got := endsStream([]byte(v)); got != want {
			t.Errorf("endsStream(%s) = %v, want %v", v, got, want)
		}
	}
}
