package fakemodel

import (
	"net/http"
)

// OpenAI Chat Completions. Reasoning goes out as reasoning_content, the field the
// OpenAI-compatible clients used by OpenCode and Pi read.

func chatCallID(t turn, i int, c ToolCall) string {
	if c.ID != "" {
		return c.ID
	}
	return t.id("call_fake", "call", t.index, i)
}

func chatFinish(r Reply) string {
	if len(r.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func chatUsage(t turn) obj {
	out := outputTokens(t.reply)
	return obj{{"prompt_tokens", t.inputTokens}, {"completion_tokens", out}, {"total_tokens", t.inputTokens + out}}
}

func writeChat(w http.ResponseWriter, t turn, stream bool) error {
	id := t.id("chatcmpl-fake", t.seq)
	r := t.reply
	if !stream {
		msg := obj{{"role", "assistant"}}
		if r.Text != "" {
			msg = append(msg, kv{"content", r.Text})
		} else {
			msg = append(msg, kv{"content", nil})
		}
		if r.Thinking != "" {
			msg = append(msg, kv{"reasoning_content", r.Thinking})
		}
		if len(r.ToolCalls) > 0 {
			calls := make([]obj, len(r.ToolCalls))
			for i, c := range r.ToolCalls {
				calls[i] = obj{{"id", chatCallID(t, i, c)}, {"type", "function"},
					{"function", obj{{"name", c.Name}, {"arguments", c.args()}}}}
			}
			msg = append(msg, kv{"tool_calls", calls})
		}
		writeJSON(w, http.StatusOK, obj{{"id", id}, {"object", "chat.completion"}, {"created", t.created},
			{"model", t.model}, {"choices", []obj{{{"index", 0}, {"message", msg}, {"logprobs", nil},
				{"finish_reason", chatFinish(r)}}}}, {"usage", chatUsage(t)}})
		return nil
	}

	s := newSSE(w)
	var err error
	chunk := func(choices []obj, usage any) {
		if err != nil {
			return
		}
		c := obj{{"id", id}, {"object", "chat.completion.chunk"}, {"created", t.created}, {"model", t.model}, {"choices", choices}}
		if t.includeUsage { // the API adds "usage" (null until the last chunk) only when asked
			c = append(c, kv{"usage", usage})
		}
		err = s.event("", marshal(c))
	}
	delta := func(d obj, finish any) {
		chunk([]obj{{{"index", 0}, {"delta", d}, {"logprobs", nil}, {"finish_reason", finish}}}, nil)
	}
	// The role chunk carries content "" before text and null before a tool-call-only
	// answer, as the real API does.
	if r.Text != "" || r.Thinking != "" {
		delta(obj{{"role", "assistant"}, {"content", ""}}, nil)
	} else {
		delta(obj{{"role", "assistant"}, {"content", nil}}, nil)
	}
	for _, c := range chunks(r.Thinking, chunkSize) {
		delta(obj{{"reasoning_content", c}}, nil)
	}
	for _, c := range chunks(r.Text, chunkSize) {
		delta(obj{{"content", c}}, nil)
	}
	for i, c := range r.ToolCalls {
		delta(obj{{"tool_calls", []obj{{{"index", i}, {"id", chatCallID(t, i, c)}, {"type", "function"},
			{"function", obj{{"name", c.Name}, {"arguments", ""}}}}}}}, nil)
		for _, a := range chunks(c.args(), chunkSize) {
			delta(obj{{"tool_calls", []obj{{{"index", i}, {"function", obj{{"arguments", a}}}}}}}, nil)
		}
	}
	delta(obj{}, chatFinish(r))
	if t.includeUsage {
		chunk([]obj{}, chatUsage(t))
	}
	if err == nil {
		err = s.event("", []byte("[DONE]"))
	}
	return err
}
