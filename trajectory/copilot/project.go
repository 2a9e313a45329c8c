package copilot

import (
	"bytes"
	"fmt"
	"io"

	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// Projection is what Copilot sends the model for a session, after the
// system message it regenerates on every request.
type Projection struct {
	SessionID string
	Items     []json.RawMessage
}

// Project is the Chat Completions history Copilot 1.0.102 replays from an
// events.jsonl (measured against its requests): a user.message is a user
// message holding its transformedContent (the prompt behind the
// <current_datetime> line Copilot stored with it), an assistant.message is
// an assistant message (content null when empty) with its tool requests as
// tool_calls whose arguments are the stored object as compact JSON, and
// each request's result is a tool message in request order. A resumed
// request carries no "refusal": null (the live one does) and tags replayed
// tool messages with __copilotMessageSource; the envelope strips both.
func Project(r io.Reader) (*Projection, error) {
	p := &Projection{}
	results := map[string]string{}
	type asst struct {
		msg []byte
		ids []string
	}
	var order []any // []byte (a finished message) or *asst
	jr := jsonl.NewReader(r)
	for jr.Next() {
		l := jr.Line()
		v := gjson.ParseBytes(l.Data)
		data := v.Get("data")
		switch v.Get("type").Str {
		case "session.start":
			p.SessionID = data.Get("sessionId").Str
		case "user.message":
			text := data.Get("transformedContent")
			if !text.Exists() {
				text = data.Get("content")
			}
			m := jsstr.AppendQuote([]byte(`{"role":"user","content":`), text.Str)
			order = append(order, append(m, '}'))
		case "assistant.message":
			var m bytes.Buffer
			m.WriteString(`{"role":"assistant","content":`)
			if c := data.Get("content").Str; c != "" {
				m.Write(jsstr.AppendQuote(nil, c))
			} else {
				m.WriteString("null")
			}
			a := &asst{}
			if reqs := data.Get("toolRequests").Array(); len(reqs) > 0 {
				m.WriteString(`,"tool_calls":[`)
				for i, q := range reqs {
					if i > 0 {
						m.WriteByte(',')
					}
					args := q.Get("arguments").Raw
					if args == "" {
						args = "{}"
					}
					var compact bytes.Buffer
					if err := json.Compact(&compact, []byte(args)); err != nil {
						return nil, fmt.Errorf("line %d: tool request arguments: %w", l.N, err)
					}
					id := q.Get("toolCallId").Str
					a.ids = append(a.ids, id)
					m.WriteString(`{"id":`)
					m.Write(jsstr.AppendQuote(nil, id))
					m.WriteString(`,"type":"function","function":{"name":`)
					m.Write(jsstr.AppendQuote(nil, q.Get("name").Str))
					m.WriteString(`,"arguments":`)
					m.Write(jsstr.AppendQuote(nil, compact.String()))
					m.WriteString(`}}`)
				}
				m.WriteByte(']')
			}
			m.WriteByte('}')
			a.msg = m.Bytes()
			order = append(order, a)
		case "tool.execution_complete":
			results[data.Get("toolCallId").Str] = ResultText(data)
		}
	}
	if err := jr.Err(); err != nil {
		return nil, err
	}
	for _, o := range order {
		switch o := o.(type) {
		case []byte:
			p.Items = append(p.Items, o)
		case *asst:
			p.Items = append(p.Items, o.msg)
			for _, id := range o.ids {
				text, ok := results[id]
				if !ok {
					return nil, fmt.Errorf("tool call %s has no result: the session stops inside a step", id)
				}
				m := jsstr.AppendQuote([]byte(`{"role":"tool","tool_call_id":`), id)
				m = append(m, `,"content":`...)
				m = jsstr.AppendQuote(m, text)
				p.Items = append(p.Items, append(m, '}'))
			}
		}
	}
	return p, nil
}
