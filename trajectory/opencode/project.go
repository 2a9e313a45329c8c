package opencode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/tidwall/gjson"
)

// Projection is what the model sees of an export document: the Chat
// Completions messages OpenCode 1.18 sends when it resumes the session,
// after its system message (which every launch regenerates from the
// environment, the agent and the tools, so it is not one of Items). Checked
// against the requests of the real CLI (1.18.33, @ai-sdk/openai-compatible):
//
//	user       {"role":"user","content":<text>}        one text part; several
//	                                                    become a text-part array
//	assistant  {"role":"assistant","content":<text parts joined>,
//	            "reasoning_content":<reasoning>,        when it has reasoning
//	            "tool_calls":[{"id","type":"function","function":{"name","arguments"}}]}
//	tool       {"role":"tool","tool_call_id":<callID>,"content":<output>}
//
// step-start, step-finish, patch and snapshot parts are not sent.
type Projection struct {
	SessionID string
	// Items are the messages, compact JSON with OpenCode's member order.
	Items []json.RawMessage
}

// Project reads an export document ({info, messages:[{info, parts}]}) and
// returns its projection. Tool parts that never finished (pending, running)
// are refused: OpenCode would send them as interrupted calls, which a
// rebuilt session never holds.
func Project(r io.Reader) (*Projection, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if !gjson.ValidBytes(data) {
		return nil, fmt.Errorf("the export is not valid JSON")
	}
	doc := gjson.ParseBytes(data)
	p := &Projection{SessionID: doc.Get("info.id").Str}
	if p.SessionID == "" {
		return nil, fmt.Errorf("the export has no info.id; an OpenCode export starts with the session's info")
	}
	for i, m := range doc.Get("messages").Array() {
		items, err := projectMessage(m)
		if err != nil {
			return nil, fmt.Errorf("message %d (%s): %w", i, m.Get("info.id").Str, err)
		}
		p.Items = append(p.Items, items...)
	}
	return p, nil
}

func projectMessage(m gjson.Result) ([]json.RawMessage, error) {
	parts := m.Get("parts").Array()
	switch role := m.Get("info.role").Str; role {
	case "user":
		var texts []string
		for _, pt := range parts {
			if pt.Get("type").Str == "text" && !pt.Get("ignored").Bool() {
				texts = append(texts, pt.Get("text").Str)
			}
		}
		var b bytes.Buffer
		b.WriteString(`{"role":"user","content":`)
		if len(texts) == 1 {
			b.WriteString(jstr(texts[0]))
		} else {
			b.WriteByte('[')
			for i, t := range texts {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`{"type":"text","text":` + jstr(t) + `}`)
			}
			b.WriteByte(']')
		}
		b.WriteByte('}')
		return []json.RawMessage{b.Bytes()}, nil
	case "assistant":
		return projectAssistant(parts)
	default:
		return nil, fmt.Errorf("unknown role %q", role)
	}
}

func projectAssistant(parts []gjson.Result) ([]json.RawMessage, error) {
	var text, reasoning strings.Builder
	var calls, results []string
	for _, pt := range parts {
		switch pt.Get("type").Str {
		case "text":
			text.WriteString(pt.Get("text").Str)
		case "reasoning":
			reasoning.WriteString(pt.Get("text").Str)
		case "tool":
			st := pt.Get("state")
			id := pt.Get("callID").Str
			var out string
			switch status := st.Get("status").Str; status {
			case "completed":
				out = st.Get("output").Str
			case "error":
				out = st.Get("error").Str
			default:
				return nil, fmt.Errorf("tool part %s (%s) is %q; only finished calls can be resumed", pt.Get("id").Str, pt.Get("tool").Str, status)
			}
			args := "{}"
			if in := st.Get("input"); in.Exists() {
				args = string(rawJSON(in))
			}
			calls = append(calls, `{"id":`+jstr(id)+`,"type":"function","function":{"name":`+jstr(pt.Get("tool").Str)+
				`,"arguments":`+jstr(args)+`}}`)
			results = append(results, `{"role":"tool","tool_call_id":`+jstr(id)+`,"content":`+jstr(out)+`}`)
		}
	}
	var b bytes.Buffer
	b.WriteString(`{"role":"assistant","content":` + jstr(text.String()))
	if reasoning.Len() > 0 {
		b.WriteString(`,"reasoning_content":` + jstr(reasoning.String()))
	}
	if len(calls) > 0 {
		b.WriteString(`,"tool_calls":[` + strings.Join(calls, ",") + `]`)
	}
	b.WriteByte('}')
	out := []json.RawMessage{b.Bytes()}
	for _, r := range results {
		out = append(out, json.RawMessage(r))
	}
	return out, nil
}

// jstr is jsonString as a string.
func jstr(s string) string { return string(jsonString(s)) }
