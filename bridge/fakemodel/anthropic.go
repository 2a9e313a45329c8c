package fakemodel

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
)

// Anthropic Messages: one content block per thinking, text and tool call, in that
// order (the order Claude models emit them).

func anthropicCallID(t turn, i int, c ToolCall) string {
	if c.ID != "" {
		return c.ID
	}
	return t.id("toolu_fake", "call", t.index, i)
}

// signature is an opaque stand-in for Anthropic's thinking signature; clients only
// store it and send it back.
func signature(thinking string) string {
	return base64.StdEncoding.EncodeToString([]byte(fakeID("sig", thinking)))
}

func anthropicStop(r Reply) string {
	if len(r.ToolCalls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func outputTokens(r Reply) int {
	n := len(r.Thinking) + len(r.Text)
	for _, c := range r.ToolCalls {
		n += len(c.Name) + len(c.args()) + len(c.Input)
	}
	return estimateTokens(n)
}

func anthropicUsage(t turn, output int) obj {
	return obj{{"input_tokens", t.inputTokens}, {"cache_creation_input_tokens", 0},
		{"cache_read_input_tokens", 0}, {"output_tokens", output}}
}

func writeAnthropic(w http.ResponseWriter, t turn, stream bool) error {
	id := t.id("msg_fake", t.proto, t.seq)
	r := t.reply
	if !stream {
		var content []obj
		if r.Thinking != "" {
			content = append(content, obj{{"type", "thinking"}, {"thinking", r.Thinking}, {"signature", signature(r.Thinking)}})
		}
		if r.Text != "" {
			content = append(content, obj{{"type", "text"}, {"text", r.Text}})
		}
		for i, c := range r.ToolCalls {
			content = append(content, obj{{"type", "tool_use"}, {"id", anthropicCallID(t, i, c)},
				{"name", c.Name}, {"input", json.RawMessage(c.args())}})
		}
		if content == nil {
			content = []obj{}
		}
		writeJSON(w, http.StatusOK, obj{{"id", id}, {"type", "message"}, {"role", "assistant"},
			{"model", t.model}, {"content", content}, {"stop_reason", anthropicStop(r)},
			{"stop_sequence", nil}, {"usage", anthropicUsage(t, outputTokens(r))}})
		return nil
	}

	s := newSSE(w)
	ev := func(name string, fields ...kv) error {
		return s.event(name, marshal(append(obj{{"type", name}}, fields...)))
	}
	err := ev("message_start", kv{"message", obj{{"id", id}, {"type", "message"}, {"role", "assistant"},
		{"model", t.model}, {"content", []any{}}, {"stop_reason", nil}, {"stop_sequence", nil},
		{"usage", anthropicUsage(t, 1)}}})
	index := 0
	// block writes one content block: start, a ping after the very first start (as
	// the API does), the deltas, stop.
	block := func(start obj, deltas []obj) {
		if err != nil {
			return
		}
		err = ev("content_block_start", kv{"index", index}, kv{"content_block", start})
		if err == nil && index == 0 {
			err = ev("ping")
		}
		for _, d := range deltas {
			if err == nil {
				err = ev("content_block_delta", kv{"index", index}, kv{"delta", d})
			}
		}
		if err == nil {
			err = ev("content_block_stop", kv{"index", index})
		}
		index++
	}
	if r.Thinking != "" {
		var ds []obj
		for _, c := range chunks(r.Thinking, chunkSize) {
			ds = append(ds, obj{{"type", "thinking_delta"}, {"thinking", c}})
		}
		ds = append(ds, obj{{"type", "signature_delta"}, {"signature", signature(r.Thinking)}})
		block(obj{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}, ds)
	}
	if r.Text != "" {
		var ds []obj
		for _, c := range chunks(r.Text, chunkSize) {
			ds = append(ds, obj{{"type", "text_delta"}, {"text", c}})
		}
		block(obj{{"type", "text"}, {"text", ""}}, ds)
	}
	for i, c := range r.ToolCalls {
		ds := []obj{{{"type", "input_json_delta"}, {"partial_json", ""}}}
		for _, p := range chunks(c.args(), chunkSize) {
			ds = append(ds, obj{{"type", "input_json_delta"}, {"partial_json", p}})
		}
		block(obj{{"type", "tool_use"}, {"id", anthropicCallID(t, i, c)}, {"name", c.Name}, {"input", obj{}}}, ds)
	}
	if err != nil {
		return err
	}
	if err := ev("message_delta", kv{"delta", obj{{"stop_reason", anthropicStop(r)}, {"stop_sequence", nil}}},
		kv{"usage", obj{{"output_tokens", outputTokens(r)}}}); err != nil {
		return err
	}
	return ev("message_stop")
}
