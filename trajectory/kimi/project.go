package kimi

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// Projection is what Kimi Code 2.1.0 sends over Chat Completions for a
// wire log when it resumes it (measured: a byte-cut log resumes from its
// loop events alone): after the system message, each user message the
// log appended (a single text part becomes a plain string), and per step
// the assistant message {content (text or null), tool_calls, and
// reasoning_content when it thought} followed by one tool message per
// call, in call order, holding the rendered result.
type Projection struct {
	Items []json.RawMessage
	Model string // the model the log's llm.request records name
}

// Project reads a wire log into its projection.
func Project(data []byte) (*Projection, error) {
	p := &Projection{}
	type step struct {
		text, think string
		calls       []gjson.Result
		results     map[string]string
		at          int // index in Items of its assistant message
	}
	steps := map[string]*step{}
	callStep := map[string]*step{}
	names := map[string]string{}
	jr := jsonl.NewReader(bytes.NewReader(data))
	// Items are built at the end: a step's messages take the place of its
	// first event, and its results arrive after it.
	type slot struct {
		user json.RawMessage
		st   *step
	}
	var slots []slot
	for jr.Next() {
		rec := gjson.ParseBytes(jr.Line().Data)
		if a := rec.Get("agentId").Str; a != "" && a != "main" {
			continue
		}
		switch rec.Get("type").Str {
		case "llm.request":
			if m := rec.Get("model").Str; m != "" {
				p.Model = m
			}
		case "context.append_message":
			m := rec.Get("message")
			if m.Get("role").Str != "user" {
				continue
			}
			parts := m.Get("content").Array()
			var content any
			if len(parts) == 1 && parts[0].Get("type").Str == "text" {
				content = parts[0].Get("text").Str
			} else {
				content = json.RawMessage(m.Get("content").Raw)
			}
			b, _ := json.Marshal(map[string]any{"role": "user", "content": content})
			slots = append(slots, slot{user: b})
		case "context.append_loop_event":
			ev := rec.Get("event")
			switch ev.Get("type").Str {
			case "step.begin":
				st := &step{results: map[string]string{}}
				steps[ev.Get("uuid").Str] = st
				slots = append(slots, slot{st: st})
			case "content.part":
				st := steps[ev.Get("stepUuid").Str]
				if st == nil {
					return nil, fmt.Errorf("line %d: content of a step that never began", jr.Line().N)
				}
				switch part := ev.Get("part"); part.Get("type").Str {
				case "text":
					st.text += part.Get("text").Str
				case "think":
					st.think += part.Get("think").Str
				}
			case "tool.call":
				st := steps[ev.Get("stepUuid").Str]
				if st == nil {
					return nil, fmt.Errorf("line %d: a tool call of a step that never began", jr.Line().N)
				}
				st.calls = append(st.calls, ev)
				callStep[ev.Get("toolCallId").Str] = st
				names[ev.Get("toolCallId").Str] = ev.Get("name").Str
			case "tool.result":
				id := ev.Get("toolCallId").Str
				if st := callStep[id]; st != nil {
					st.results[id] = renderResult(names[id], ev.Get("result"))
				}
			}
		}
	}
	if err := jr.Err(); err != nil {
		return nil, err
	}
	for _, sl := range slots {
		if sl.st == nil {
			p.Items = append(p.Items, sl.user)
			continue
		}
		st := sl.st
		if st.text == "" && len(st.calls) == 0 {
			continue // a step that produced nothing sends nothing
		}
		msg := map[string]any{"role": "assistant", "content": nil}
		if st.text != "" {
			msg["content"] = st.text
		}
		if len(st.calls) > 0 {
			var calls []any
			for _, c := range st.calls {
				calls = append(calls, map[string]any{"id": c.Get("toolCallId").Str, "type": "function",
					"function": map[string]any{"name": c.Get("name").Str, "arguments": c.Get("args").Raw}})
			}
			msg["tool_calls"] = calls
		}
		if st.think != "" {
			msg["reasoning_content"] = st.think
		}
		b, _ := json.Marshal(msg)
		p.Items = append(p.Items, b)
		for _, c := range st.calls {
			id := c.Get("toolCallId").Str
			out, ok := st.results[id]
			if !ok {
				return nil, fmt.Errorf("tool call %s has no result", id)
			}
			b, _ := json.Marshal(map[string]any{"role": "tool", "tool_call_id": id, "content": out})
			p.Items = append(p.Items, b)
		}
	}
	return p, nil
}
