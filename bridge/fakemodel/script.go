package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Script is what the fake model answers, in conversation order. Reply i answers a
// request whose conversation already holds i assistant turns, so a retried request,
// a resumed session or a title side call never shifts the script.
type Script struct {
	Replies []Reply `json:"replies"`
	// Final answers every main request past the end of Replies; default "Done.".
	Final string `json:"final,omitempty"`
	// Side answers requests that carry no tools (titles, quota probes); default
	// "Scripted side reply.". A side request that asks for JSON output gets an
	// object built from its schema instead.
	Side string `json:"side,omitempty"`
	// Models listed by GET /v1/models; default ["fake-model"].
	Models []string `json:"models,omitempty"`
	// TextActions serves requests without tools from Replies too, for
	// agents that parse their actions from the reply text and send no tool
	// definitions (mini-swe-agent 1.x); such a script has no side calls.
	TextActions bool `json:"text_actions,omitempty"`
}

// Reply is one model response: optional reasoning, optional visible text and a batch
// of tool calls (several calls = parallel calls in one response).
type Reply struct {
	Thinking  string     `json:"thinking,omitempty"`
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ToolCall is a function call with JSON arguments, or (Type "custom", Responses API
// only) a freeform call such as Codex's apply_patch whose Input is plain text.
type ToolCall struct {
	// ID overrides the generated call id; leave empty so ids stay deterministic.
	ID        string          `json:"id,omitempty"`
	Type      string          `json:"type,omitempty"` // "" or "function", or "custom"
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // a JSON object; default {}
	Input     string          `json:"input,omitempty"`     // custom calls only
}

const (
	defaultFinal = "Done."
	defaultSide  = "Scripted side reply."
)

// custom reports whether the call is a freeform (custom_tool_call) call.
func (c ToolCall) custom() bool { return c.Type == "custom" }

// args returns the compact JSON arguments, {} when none were given.
func (c ToolCall) args() string {
	if len(bytes.TrimSpace(c.Arguments)) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, c.Arguments); err != nil {
		return string(c.Arguments) // Validate rejects this; keep serving something visible
	}
	return b.String()
}

// LoadScript reads and validates a script file.
func LoadScript(path string) (Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("read fake-model script: %w", err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return Script{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseScript decodes a JSON script strictly (unknown keys are errors, so a typo
// such as "tool_call" cannot silently drop a call) and validates it.
func ParseScript(data []byte) (Script, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return Script{}, fmt.Errorf("fake-model script is not valid JSON of the documented shape "+
			"(see bridge/fakemodel/testdata/example-script.json): %w", err)
	}
	if dec.More() {
		return Script{}, fmt.Errorf("fake-model script has data after the top-level object")
	}
	return s, s.Validate()
}

// Validate reports the first malformed reply, naming it by index.
func (s Script) Validate() error {
	for i, r := range s.Replies {
		if r.Thinking == "" && r.Text == "" && len(r.ToolCalls) == 0 {
			return fmt.Errorf("reply %d is empty: give it text, thinking or tool_calls", i)
		}
		for j, c := range r.ToolCalls {
			where := fmt.Sprintf("reply %d tool call %d", i, j)
			if c.Name == "" {
				return fmt.Errorf("%s has no name", where)
			}
			switch c.Type {
			case "", "function":
				if len(bytes.TrimSpace(c.Arguments)) > 0 {
					var obj map[string]json.RawMessage
					if err := json.Unmarshal(c.Arguments, &obj); err != nil || obj == nil {
						return fmt.Errorf("%s (%s): arguments must be a JSON object", where, c.Name)
					}
				}
				if c.Input != "" {
					return fmt.Errorf("%s (%s): input is only for type \"custom\"; use arguments", where, c.Name)
				}
			case "custom":
				if len(c.Arguments) > 0 {
					return fmt.Errorf("%s (%s): a custom call takes input text, not arguments", where, c.Name)
				}
			default:
				return fmt.Errorf("%s (%s): type %q is neither \"function\" nor \"custom\"", where, c.Name, c.Type)
			}
		}
	}
	return nil
}

// Expand returns a copy with every "{NAME}" replaced by vars[NAME] in texts,
// reasoning, custom inputs and argument strings. Scripts stay machine-independent
// ("{CWD}/hello.txt") while the served calls carry real paths.
func (s Script) Expand(vars map[string]string) Script {
	if len(vars) == 0 {
		return s
	}
	plain := make([]string, 0, 2*len(vars))
	quoted := make([]string, 0, 2*len(vars))
	for k, v := range vars {
		plain = append(plain, "{"+k+"}", v)
		quoted = append(quoted, "{"+k+"}", jsonStringBody(v))
	}
	pr, qr := strings.NewReplacer(plain...), strings.NewReplacer(quoted...)
	out := s
	out.Final, out.Side = pr.Replace(s.Final), pr.Replace(s.Side)
	out.Replies = make([]Reply, len(s.Replies))
	for i, r := range s.Replies {
		r.Thinking, r.Text = pr.Replace(r.Thinking), pr.Replace(r.Text)
		calls := make([]ToolCall, len(r.ToolCalls))
		for j, c := range r.ToolCalls {
			c.Input = pr.Replace(c.Input)
			if len(c.Arguments) > 0 {
				// Inside JSON a value must be escaped; placeholders only occur in
				// string literals, so substituting the escaped form keeps it valid.
				c.Arguments = json.RawMessage(qr.Replace(string(c.Arguments)))
			}
			calls[j] = c
		}
		r.ToolCalls = calls
		out.Replies[i] = r
	}
	return out
}

// jsonStringBody is s encoded as a JSON string without the surrounding quotes.
func jsonStringBody(s string) string {
	b := marshal(s)
	return string(b[1 : len(b)-1])
}
