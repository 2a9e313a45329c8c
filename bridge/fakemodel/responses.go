package fakemodel

import (
	"encoding/base64"
	"net/http"
)

// OpenAI Responses: output items reasoning, message, then one function_call or
// custom_tool_call item per call.

// rItem is one output item in its final form plus what streaming it needs.
type rItem struct {
	kind  string // reasoning | message | function_call | custom_tool_call
	id    string
	text  string // summary text, message text, arguments or custom input
	call  string // call_id
	name  string
	added obj // the item as announced by response.output_item.added
	done  obj // the item as completed
}

func responseItems(t turn) []rItem {
	r := t.reply
	var items []rItem
	if r.Thinking != "" {
		id := t.id("rs_fake", t.seq, "reasoning")
		done := obj{{"id", id}, {"type", "reasoning"},
			{"summary", []obj{{{"type", "summary_text"}, {"text", r.Thinking}}}}}
		if t.encrypted {
			// Opaque to clients, as the real value is; they store it and send it back.
			done = append(done, kv{"encrypted_content", base64.StdEncoding.EncodeToString([]byte("fake-reasoning:" + r.Thinking))})
		}
		items = append(items, rItem{kind: "reasoning", id: id, text: r.Thinking,
			added: obj{{"id", id}, {"type", "reasoning"}, {"summary", []any{}}}, done: done})
	}
	if r.Text != "" {
		id := t.id("msg_fake", t.seq, "message")
		items = append(items, rItem{kind: "message", id: id, text: r.Text,
			added: obj{{"id", id}, {"type", "message"}, {"status", "in_progress"}, {"content", []any{}}, {"role", "assistant"}},
			done: obj{{"id", id}, {"type", "message"}, {"status", "completed"},
				{"content", []obj{outputText(r.Text)}}, {"role", "assistant"}}})
	}
	for i, c := range r.ToolCalls {
		call := c.ID
		if call == "" {
			call = t.id("call_fake", "call", t.index, i)
		}
		if c.custom() {
			id := t.id("ctc_fake", t.seq, i)
			items = append(items, rItem{kind: "custom_tool_call", id: id, text: c.Input, call: call, name: c.Name,
				added: obj{{"id", id}, {"type", "custom_tool_call"}, {"status", "in_progress"}, {"call_id", call}, {"input", ""}, {"name", c.Name}},
				done:  obj{{"id", id}, {"type", "custom_tool_call"}, {"status", "completed"}, {"call_id", call}, {"input", c.Input}, {"name", c.Name}}})
			continue
		}
		id := t.id("fc_fake", t.seq, i)
		items = append(items, rItem{kind: "function_call", id: id, text: c.args(), call: call, name: c.Name,
			added: obj{{"id", id}, {"type", "function_call"}, {"status", "in_progress"}, {"arguments", ""}, {"call_id", call}, {"name", c.Name}},
			done:  obj{{"id", id}, {"type", "function_call"}, {"status", "completed"}, {"arguments", c.args()}, {"call_id", call}, {"name", c.Name}}})
	}
	return items
}

func outputText(text string) obj {
	return obj{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", text}}
}

func responseObject(t turn, status string, output []obj, usage any) obj {
	if output == nil {
		output = []obj{}
	}
	return obj{{"id", t.id("resp_fake", t.seq)}, {"object", "response"}, {"created_at", t.created},
		{"status", status}, {"error", nil}, {"incomplete_details", nil}, {"model", t.model},
		{"output", output}, {"parallel_tool_calls", true}, {"previous_response_id", nil},
		{"store", false}, {"usage", usage}}
}

func responsesUsage(t turn) obj {
	out := outputTokens(t.reply)
	reasoning := 0
	if t.reply.Thinking != "" {
		reasoning = estimateTokens(len(t.reply.Thinking))
	}
	return obj{{"input_tokens", t.inputTokens}, {"input_tokens_details", obj{{"cached_tokens", 0}}},
		{"output_tokens", out}, {"output_tokens_details", obj{{"reasoning_tokens", reasoning}}},
		{"total_tokens", t.inputTokens + out}}
}

func writeResponses(w http.ResponseWriter, t turn, stream bool) error {
	items := responseItems(t)
	var output []obj
	for _, it := range items {
		output = append(output, it.done)
	}
	if !stream {
		writeJSON(w, http.StatusOK, responseObject(t, "completed", output, responsesUsage(t)))
		return nil
	}

	s := newSSE(w)
	seq := 0
	var err error
	ev := func(name string, fields ...kv) {
		if err != nil {
			return
		}
		err = s.event(name, marshal(append(obj{{"type", name}, {"sequence_number", seq}}, fields...)))
		seq++
	}
	ev("response.created", kv{"response", responseObject(t, "in_progress", nil, nil)})
	ev("response.in_progress", kv{"response", responseObject(t, "in_progress", nil, nil)})
	for oi, it := range items {
		at := []kv{{"output_index", oi}, {"item_id", it.id}}
		ev("response.output_item.added", kv{"output_index", oi}, kv{"item", it.added})
		switch it.kind {
		case "reasoning":
			part := func(text string) kv { return kv{"part", obj{{"type", "summary_text"}, {"text", text}}} }
			sum := append(at[:2:2], kv{"summary_index", 0})
			ev("response.reasoning_summary_part.added", append(sum, part(""))...)
			for _, c := range chunks(it.text, chunkSize) {
				ev("response.reasoning_summary_text.delta", append(sum, kv{"delta", c})...)
			}
			ev("response.reasoning_summary_text.done", append(sum, kv{"text", it.text})...)
			ev("response.reasoning_summary_part.done", append(sum, part(it.text))...)
		case "message":
			ci := append(at[:2:2], kv{"content_index", 0})
			ev("response.content_part.added", append(ci, kv{"part", outputText("")})...)
			for _, c := range chunks(it.text, chunkSize) {
				ev("response.output_text.delta", append(ci, kv{"delta", c}, kv{"logprobs", []any{}})...)
			}
			ev("response.output_text.done", append(ci, kv{"text", it.text}, kv{"logprobs", []any{}})...)
			ev("response.content_part.done", append(ci, kv{"part", outputText(it.text)})...)
		case "function_call":
			for _, c := range chunks(it.text, chunkSize) {
				ev("response.function_call_arguments.delta", append(at, kv{"delta", c})...)
			}
			ev("response.function_call_arguments.done", append(at, kv{"name", it.name}, kv{"arguments", it.text})...)
		case "custom_tool_call":
			for _, c := range chunks(it.text, chunkSize) {
				ev("response.custom_tool_call_input.delta", append(at, kv{"delta", c})...)
			}
			ev("response.custom_tool_call_input.done", append(at, kv{"input", it.text})...)
		}
		ev("response.output_item.done", kv{"output_index", oi}, kv{"item", it.done})
	}
	ev("response.completed", kv{"response", responseObject(t, "completed", output, responsesUsage(t))})
	return err
}
