package pi

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// Projection is what the model sees of a v2/v3 session file over Chat
// Completions (pi-ai's openai-completions provider, the protocol the
// continuation runs pi with): the messages after the system message (which
// every launch regenerates), for the entry chain from the last entry to the
// root. Checked against the requests of the real CLI (0.73.1):
//
//	user       {"role":"user","content":[{"type":"text","text":…}]}   (a string stays a string)
//	assistant  {"role":"assistant","content":<text or null>,
//	            "<thinkingSignature>":<thinking>,                   e.g. reasoning_content
//	            "tool_calls":[{"id","type":"function","function":{"name","arguments"}}]}
//	toolResult {"role":"tool","content":<text>,"tool_call_id":…}
//
// model_change and thinking_level_change entries are not sent. Entries that
// change the history in ways this projection does not model (compaction,
// branch summaries, custom messages, images) are refused rather than
// guessed.
type Projection struct {
	SessionID string
	Cwd       string
	// LastID is the id of the last entry of the chain: the entry the next
	// message is appended to.
	LastID string
	Items  []json.RawMessage
	// System counts the system messages on the chain (Pi ≥ 1.x), which
	// make up the leading system message rather than items.
	System int
}

// Project reads a session file and returns its projection.
func Project(r io.Reader) (*Projection, error) {
	jr := jsonl.NewReader(r)
	type ent struct {
		parent string
		raw    []byte
	}
	byID := map[string]ent{}
	p := &Projection{}
	first := true
	for jr.Next() {
		ln := jr.Line()
		rec := gjson.ParseBytes(ln.Data)
		if first {
			first = false
			if rec.Get("type").Str != "session" || rec.Get("version").Int() < 2 {
				return nil, fmt.Errorf("line %d: not a pi v2/v3 session header", ln.N)
			}
			p.SessionID, p.Cwd = rec.Get("id").Str, rec.Get("cwd").Str
			continue
		}
		id := rec.Get("id").Str
		if id == "" {
			return nil, fmt.Errorf("line %d: entry without an id", ln.N)
		}
		byID[id] = ent{parent: rec.Get("parentId").Str, raw: append([]byte(nil), ln.Data...)}
		p.LastID = id
	}
	if err := jr.Err(); err != nil {
		return nil, err
	}
	if first {
		return nil, fmt.Errorf("empty session file")
	}
	var chain [][]byte
	for id, n := p.LastID, 0; id != ""; n++ {
		e, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("entry %s: parent not in the file", id)
		}
		if n > len(byID) {
			return nil, fmt.Errorf("entry %s: the parent chain has a cycle", id)
		}
		chain = append(chain, e.raw)
		id = e.parent
	}
	for i := len(chain) - 1; i >= 0; i-- {
		rec := gjson.ParseBytes(chain[i])
		switch typ := rec.Get("type").Str; typ {
		case "model_change", "thinking_level_change", "label", "session_info", "custom":
		case "message":
			if rec.Get("message.role").Str == "system" {
				// Pi ≥ 1.x stores its prompt and tool declarations as system
				// messages; the request's leading system message is built from
				// them (and from the launch: cwd, install path), not sent where
				// they sit.
				p.System++
				continue
			}
			item, err := projectPiMessage(rec.Get("message"))
			if err != nil {
				return nil, fmt.Errorf("entry %s: %w", rec.Get("id").Str, err)
			}
			p.Items = append(p.Items, item)
		default:
			return nil, fmt.Errorf("entry %s: a %s entry changes what pi sends in a way pvisor does not model", rec.Get("id").Str, typ)
		}
	}
	return p, nil
}

func projectPiMessage(m gjson.Result) (json.RawMessage, error) {
	c := m.Get("content")
	switch role := m.Get("role").Str; role {
	case "user":
		b := []byte(`{"role":"user","content":`)
		if c.Type == gjson.String {
			b = jsstr.AppendQuote(b, c.Str)
		} else {
			b = append(b, '[')
			for i, part := range c.Array() {
				if part.Get("type").Str != "text" {
					return nil, fmt.Errorf("a user %s part is not modelled", part.Get("type").Str)
				}
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"type":"text","text":`...)
				b = jsstr.AppendQuote(b, part.Get("text").Str)
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		return append(b, '}'), nil
	case "assistant":
		var texts []string
		var thinking []string
		field := ""
		var calls []byte
		for _, part := range c.Array() {
			switch part.Get("type").Str {
			case "text":
				texts = append(texts, part.Get("text").Str)
			case "thinking":
				thinking = append(thinking, part.Get("thinking").Str)
				if f := part.Get("thinkingSignature").Str; f != "" {
					field = f
				}
			case "toolCall":
				if len(calls) > 0 {
					calls = append(calls, ',')
				}
				args := part.Get("arguments")
				argJSON := "{}"
				if args.Exists() {
					argJSON = string(compact(args.Raw))
				}
				calls = append(calls, `{"id":`...)
				calls = jsstr.AppendQuote(calls, part.Get("id").Str)
				calls = append(calls, `,"type":"function","function":{"name":`...)
				calls = jsstr.AppendQuote(calls, part.Get("name").Str)
				calls = append(calls, `,"arguments":`...)
				calls = jsstr.AppendQuote(calls, argJSON)
				calls = append(calls, `}}`...)
			default:
				return nil, fmt.Errorf("an assistant %s part is not modelled", part.Get("type").Str)
			}
		}
		b := []byte(`{"role":"assistant","content":`)
		if len(texts) == 0 {
			b = append(b, "null"...)
		} else {
			b = jsstr.AppendQuote(b, strings.Join(texts, ""))
		}
		if len(thinking) > 0 {
			if field == "" {
				field = "reasoning_content"
			}
			b = jsstr.AppendQuote(append(b, ','), field)
			b = jsstr.AppendQuote(append(b, ':'), strings.Join(thinking, "\n"))
		}
		if len(calls) > 0 {
			b = append(b, `,"tool_calls":[`...)
			b = append(append(b, calls...), ']')
		}
		return append(b, '}'), nil
	case "toolResult":
		var texts []string
		for _, part := range c.Array() {
			if part.Get("type").Str != "text" {
				return nil, fmt.Errorf("a tool result %s part is not modelled", part.Get("type").Str)
			}
			texts = append(texts, part.Get("text").Str)
		}
		b := jsstr.AppendQuote([]byte(`{"role":"tool","content":`), strings.Join(texts, "\n"))
		b = jsstr.AppendQuote(append(b, `,"tool_call_id":`...), m.Get("toolCallId").Str)
		return append(b, '}'), nil
	default:
		return nil, fmt.Errorf("a %q message is not modelled", role)
	}
}

// compact keeps the member order as stored (JSON.stringify of the parsed
// arguments keeps insertion order) and drops whitespace.
func compact(raw string) []byte {
	var out []byte
	inStr, esc := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inStr:
			out = append(out, c)
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
			out = append(out, c)
		case c == ' ' || c == '\n' || c == '\r' || c == '\t':
		default:
			out = append(out, c)
		}
	}
	return out
}
