package openhands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// What the SDK (1.58.x) puts into a tool result's text, as its terminal
// and LLM message serializer do.
const (
	errorHeader = "[An error occurred during execution.]\n"
	// terminalRenderLimit is the terminal's MAX_CMD_OUTPUT_SIZE: a rendered
	// result longer than this is cut in the middle and the full text saved
	// to a file, which the projection does not reproduce.
	terminalRenderLimit = 30000
	// toolTextLimit is the serializer's DEFAULT_TEXT_CONTENT_LIMIT for any
	// tool result text.
	toolTextLimit = 50000
)

// projectedObservations are the observation kinds whose model-visible text
// is known: the SDK's default (error header, then the content parts) or
// the terminal's own rendering. Others (browser, task tracker, delegation,
// MCP) render themselves in ways the projection does not follow.
var projectedObservations = map[string]bool{
	"TerminalObservation": true, "FileEditorObservation": true,
	"ThinkObservation": true, "FinishObservation": true,
}

// Projection is what openhands-sdk sends to the model as Chat Completions
// messages for a V1 event stream (one event per line): the system prompt,
// the user's messages (consecutive ones merged into one turn), each
// response's actions as one assistant message with its tool calls, and
// each result as a tool message rendered as the SDK renders it. It is the
// prefix every request of a continued conversation must start with.
//
// Events the SDK does not show the model (state updates, pauses, …) are
// skipped. A condensed conversation, images, and results the SDK would cut
// while rendering are refused: their rendering is not reproduced here.
func Projection(r io.Reader) ([]json.RawMessage, error) {
	var msgs []map[string]any
	jr := jsonl.NewReader(r)
	for jr.Next() {
		l := jr.Line()
		ev := gjson.ParseBytes(l.Data)
		m, err := projectEvent(ev)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", l.N, err)
		}
		if m == nil {
			continue
		}
		if ev.Get("kind").Str == "ActionEvent" && len(msgs) > 0 {
			if prev := msgs[len(msgs)-1]; prev["_response"] != nil && prev["_response"] == m["_response"] {
				// A parallel call of the same response: one assistant
				// message carries them all, the first event's thought.
				prev["tool_calls"] = append(prev["tool_calls"].([]any), m["tool_calls"].([]any)...)
				continue
			}
		}
		if len(msgs) > 0 && plainUser(msgs[len(msgs)-1]) && plainUser(m) {
			prev := msgs[len(msgs)-1]
			prev["content"] = append(prev["content"].([]any), m["content"].([]any)...)
			continue
		}
		msgs = append(msgs, m)
	}
	if err := jr.Err(); err != nil {
		return nil, err
	}
	if t := jr.Torn(); t != nil {
		return nil, fmt.Errorf("the last event is cut off: %v", t)
	}
	out := make([]json.RawMessage, 0, len(msgs))
	for _, m := range msgs {
		if m["role"] == "assistant" {
			finishAssistant(m)
		}
		delete(m, "_response")
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(m); err != nil {
			return nil, err
		}
		out = append(out, json.RawMessage(bytes.TrimRight(b.Bytes(), "\n")))
	}
	return out, nil
}

func projectEvent(ev gjson.Result) (map[string]any, error) {
	switch kind := ev.Get("kind").Str; kind {
	case "SystemPromptEvent":
		parts := []any{}
		for _, p := range []gjson.Result{ev.Get("system_prompt"), ev.Get("dynamic_context")} {
			if p.IsObject() {
				parts = append(parts, textPart(p))
			}
		}
		return map[string]any{"role": "system", "content": parts}, nil
	case "MessageEvent":
		msg := ev.Get("llm_message")
		parts, err := contentParts(msg.Get("content"), ev.Get("extended_content"))
		if err != nil {
			return nil, err
		}
		if msg.Get("tool_calls").IsArray() && len(msg.Get("tool_calls").Array()) > 0 {
			return nil, fmt.Errorf("a MessageEvent with tool calls is not projected")
		}
		m := map[string]any{"role": msg.Get("role").Str, "content": parts}
		if tb := msg.Get("thinking_blocks"); m["role"] == "assistant" && len(tb.Array()) > 0 {
			m["thinking_blocks"] = json.RawMessage(tb.Raw)
		}
		return m, nil
	case "ActionEvent":
		parts, err := contentParts(ev.Get("thought"), gjson.Result{})
		if err != nil {
			return nil, err
		}
		tc := ev.Get("tool_call")
		call := map[string]any{"id": tc.Get("id").Str, "type": "function",
			"function": map[string]any{"name": tc.Get("name").Str, "arguments": tc.Get("arguments").Str}}
		m := map[string]any{"role": "assistant", "content": parts, "tool_calls": []any{call},
			"_response": ev.Get("llm_response_id").Str}
		if m["_response"] == "" {
			m["_response"] = nil
		}
		if tb := ev.Get("thinking_blocks"); len(tb.Array()) > 0 {
			m["thinking_blocks"] = json.RawMessage(tb.Raw)
		}
		return m, nil
	case "ObservationEvent":
		return observationMessage(ev)
	case "AgentErrorEvent":
		return toolMessage(ev, []any{map[string]any{"type": "text", "text": ev.Get("error").Str}})
	case "UserRejectObservation":
		return toolMessage(ev, []any{map[string]any{"type": "text", "text": "Action rejected: " + ev.Get("rejection_reason").Str}})
	case "Condensation", "CondensationSummaryEvent", "CondensationRequest":
		return nil, fmt.Errorf("the conversation was condensed (%s): continuing a condensed conversation is not supported", kind)
	}
	return nil, nil
}

func observationMessage(ev gjson.Result) (map[string]any, error) {
	o := ev.Get("observation")
	kind := o.Get("kind").Str
	if !projectedObservations[kind] {
		return nil, fmt.Errorf("a %s result is not projected (known: terminal, file editor, think, finish)", kind)
	}
	var parts []any
	if o.Get("is_error").Bool() {
		parts = append(parts, map[string]any{"type": "text", "text": errorHeader})
	}
	if kind == "TerminalObservation" {
		text := renderTerminal(o)
		if n := utf8.RuneCountInString(text); n > terminalRenderLimit {
			return nil, fmt.Errorf("a terminal result renders to %d characters; the SDK cuts those over %d and saves the rest to a file, which the projection does not reproduce", n, terminalRenderLimit)
		}
		parts = append(parts, map[string]any{"type": "text", "text": text})
		ext, err := contentParts(ev.Get("extended_content"), gjson.Result{})
		if err != nil {
			return nil, err
		}
		parts = append(parts, ext...)
	} else {
		rest, err := contentParts(o.Get("content"), ev.Get("extended_content"))
		if err != nil {
			return nil, err
		}
		parts = append(parts, rest...)
	}
	return toolMessage(ev, parts)
}

// renderTerminal is the terminal result's text as the model reads it: the
// output between its prefix and suffix, then the directory, interpreter
// and exit code lines.
func renderTerminal(o gjson.Result) string {
	md := o.Get("metadata")
	text := md.Get("prefix").Str + partsText(o.Get("content")) + md.Get("suffix").Str
	if wd := md.Get("working_dir").Str; wd != "" {
		text += "\n[Current working directory: " + wd + "]"
	}
	if py := md.Get("py_interpreter_path").Str; py != "" {
		text += "\n[Python interpreter: " + py + "]"
	}
	// -1 (the default) is a command that has not finished.
	if code := md.Get("exit_code"); code.Exists() && code.Int() != -1 {
		text += fmt.Sprintf("\n[Command finished with exit code %d]", code.Int())
	}
	return text
}

func toolMessage(ev gjson.Result, parts []any) (map[string]any, error) {
	m := map[string]any{"role": "tool", "content": parts, "tool_call_id": ev.Get("tool_call_id").Str, "name": ev.Get("tool_name").Str}
	for _, p := range parts {
		pm := p.(map[string]any)
		if _, ok := pm["cache_control"]; ok {
			// The serializer moves a tool result's cache mark to the message.
			delete(pm, "cache_control")
			m["cache_control"] = map[string]any{"type": "ephemeral"}
		}
		if t, _ := pm["text"].(string); utf8.RuneCountInString(t) > toolTextLimit {
			return nil, fmt.Errorf("a %s result holds %d characters; the SDK cuts those over %d, which the projection does not reproduce", ev.Get("tool_name").Str, utf8.RuneCountInString(t), toolTextLimit)
		}
	}
	return m, nil
}

// contentParts are the Chat Completions parts of a content list and its
// extension (text only: images depend on the model's vision support).
func contentParts(content, extended gjson.Result) ([]any, error) {
	parts := []any{}
	var err error
	add := func(_, p gjson.Result) bool {
		if t := p.Get("type").Str; t != "text" {
			err = fmt.Errorf("a %q content part is not projected (text only)", t)
			return false
		}
		parts = append(parts, textPart(p))
		return true
	}
	if content.Type == gjson.String {
		parts = append(parts, map[string]any{"type": "text", "text": content.Str})
	} else {
		content.ForEach(add)
	}
	if err == nil {
		extended.ForEach(add)
	}
	return parts, err
}

func textPart(p gjson.Result) map[string]any {
	m := map[string]any{"type": "text", "text": p.Get("text").Str}
	if p.Get("cache_prompt").Bool() {
		m["cache_control"] = map[string]any{"type": "ephemeral"}
	}
	return m
}

func plainUser(m map[string]any) bool {
	_, calls := m["tool_calls"]
	_, id := m["tool_call_id"]
	return m["role"] == "user" && !calls && !id
}

// finishAssistant drops blank text parts from a message with tool calls
// (and the content when none is left); a message without tool calls and
// without content says "".
func finishAssistant(m map[string]any) {
	parts, _ := m["content"].([]any)
	if _, calls := m["tool_calls"]; !calls {
		if len(parts) == 0 {
			m["content"] = ""
		}
		return
	}
	kept := []any{}
	for _, p := range parts {
		if t, ok := p.(map[string]any)["text"].(string); ok && isBlank(t) {
			continue
		}
		kept = append(kept, p)
	}
	if len(kept) == 0 {
		delete(m, "content")
	} else {
		m["content"] = kept
	}
}

// isBlank is Python's str.strip() == "" for the whitespace JSON text holds.
func isBlank(s string) bool {
	return len(bytes.TrimSpace([]byte(s))) == 0
}
