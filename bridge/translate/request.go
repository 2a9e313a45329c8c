// Package translate lets an agent that speaks Anthropic Messages (Claude Code)
// continue on a server that only speaks OpenAI Chat Completions (vLLM, LiteLLM,
// llama.cpp, Ollama). MessagesToChat rewrites a request, StreamToAnthropic and
// ChatToMessage rewrite the answer, ErrorToAnthropic rewrites an error, and
// ChatUpstream ties them together as a bridge.Upstream.
//
// What does not survive the trip, by design:
//
//   - thinking and redacted_thinking blocks are dropped from requests: Chat has no
//     field for them, and their signatures only mean something to Anthropic.
//     reasoning_content in answers is dropped too, so no unsigned thinking block
//     ever reaches the agent's session file.
//   - images, documents and server-tool blocks are refused with an error: a text-only
//     Chat server cannot take them, and silently dropping them would change what
//     the model sees.
//   - mid-conversation role "system" messages (Claude Code's reminders) are appended
//     to the one leading system message, because vLLM accepts only one, first.
//   - tool_result is_error has no Chat field; the content is prefixed "Error: ".
//   - cache_control, metadata, top_k, thinking and other Anthropic-only fields are
//     not sent; server tools (a tools entry with a type and no input_schema, such as
//     web_search) are left out of tools.
//   - Chat does not say which stop sequence ended a turn, so stop_reason is
//     end_turn, never stop_sequence.
package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// anthropic request shapes: only the fields the translation reads. Everything
// else in the open Anthropic body is ignored.
type anthRequest struct {
	Model         string          `json:"model"`
	MaxTokens     *int64          `json:"max_tokens"`
	System        json.RawMessage `json:"system"`
	Messages      []anthMessage   `json:"messages"`
	Tools         []anthTool      `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	StopSequences []string        `json:"stop_sequences"`
	Stream        bool            `json:"stream"`
}

type anthMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type anthTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// chat request shapes, in the field order the OpenAI documentation uses so the
// goldens read naturally.
type chatRequest struct {
	Model             string         `json:"model"`
	Messages          []chatMessage  `json:"messages"`
	Tools             []chatTool     `json:"tools,omitempty"`
	ToolChoice        any            `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool          `json:"parallel_tool_calls,omitempty"`
	MaxTokens         *int64         `json:"max_tokens,omitempty"`
	Temperature       *float64       `json:"temperature,omitempty"`
	TopP              *float64       `json:"top_p,omitempty"`
	Stop              []string       `json:"stop,omitempty"`
	Stream            bool           `json:"stream,omitempty"`
	StreamOptions     *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is null only for an assistant message that holds nothing but tool
	// calls, which is how OpenAI itself writes one.
	Content    *string        `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatToolSpec `json:"function"`
}

type chatToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// MessagesToChat translates an Anthropic Messages request body into a Chat
// Completions request body for model (the request's own model when model is
// empty). A streaming request asks for usage in the final chunk, which the
// translated stream needs for message_delta.
func MessagesToChat(body []byte, model string) ([]byte, error) {
	out, _, err := messagesToChat(body, model)
	return out, err
}

// messagesToChat also reports whether the request streams.
func messagesToChat(body []byte, model string) ([]byte, bool, error) {
	out, err := translateRequest(body, model)
	if err != nil {
		return nil, false, err
	}
	b, err := marshal(out)
	return b, out.Stream, err
}

func translateRequest(body []byte, model string) (*chatRequest, error) {
	var in anthRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("translate: the request is not an Anthropic Messages JSON object: %w", err)
	}
	out := chatRequest{
		Model:       model,
		MaxTokens:   in.MaxTokens,
		Temperature: in.Temperature,
		TopP:        in.TopP,
		Stop:        in.StopSequences,
		Stream:      in.Stream,
	}
	if out.Model == "" {
		out.Model = in.Model
	}
	if in.Stream {
		out.StreamOptions = &streamOptions{IncludeUsage: true}
	}

	system, err := textOf(in.System, "system")
	if err != nil {
		return nil, err
	}
	var msgs []chatMessage
	for i, m := range in.Messages {
		where := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system":
			t, err := textOf(m.Content, where)
			if err != nil {
				return nil, err
			}
			system = joinText(system, t)
		case "user":
			ms, err := userMessages(m.Content, where)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, ms...)
		case "assistant":
			am, err := assistantMessage(m.Content, where)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, am)
		default:
			return nil, fmt.Errorf("translate: %s has role %q; Anthropic Messages knows user, assistant and system", where, m.Role)
		}
	}
	if system != "" {
		msgs = append([]chatMessage{{Role: "system", Content: &system}}, msgs...)
	}
	out.Messages = msgs
	if out.Messages == nil {
		out.Messages = []chatMessage{}
	}

	for i, t := range in.Tools {
		if len(t.InputSchema) == 0 && t.Type != "" && t.Type != "custom" {
			continue // a server tool (web_search, code_execution…): nothing a Chat server can run
		}
		if t.Name == "" {
			return nil, fmt.Errorf("translate: tools[%d] has no name", i)
		}
		params := t.InputSchema
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, chatTool{Type: "function",
			Function: chatToolSpec{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	if err := toolChoice(in.ToolChoice, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// toolChoice maps auto/any/tool/none; "any" is Chat's "required".
func toolChoice(raw json.RawMessage, out *chatRequest) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var tc struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}
	if err := json.Unmarshal(raw, &tc); err != nil {
		return fmt.Errorf("translate: tool_choice is not an object: %w", err)
	}
	switch tc.Type {
	case "auto":
		out.ToolChoice = "auto"
	case "any":
		out.ToolChoice = "required"
	case "none":
		out.ToolChoice = "none"
	case "tool":
		if tc.Name == "" {
			return errors.New(`translate: tool_choice of type "tool" has no name`)
		}
		out.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}}
	default:
		return fmt.Errorf("translate: tool_choice type %q is not one of auto, any, tool, none", tc.Type)
	}
	if tc.DisableParallelToolUse && len(out.Tools) > 0 {
		f := false
		out.ParallelToolCalls = &f
	}
	return nil
}

// content decodes a content field: a string becomes one text block.
func content(raw json.RawMessage, where string) ([]anthBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("translate: %s content: %w", where, err)
		}
		return []anthBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []anthBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("translate: %s content is neither a string nor an array of blocks: %w", where, err)
	}
	return blocks, nil
}

// textOf reads content that may only hold text (system prompts, tool results).
func textOf(raw json.RawMessage, where string) (string, error) {
	blocks, err := content(raw, where)
	if err != nil {
		return "", err
	}
	var text string
	for j, b := range blocks {
		if b.Type != "text" {
			return "", unsupported(fmt.Sprintf("%s[%d]", where, j), b.Type)
		}
		text = joinText(text, b.Text)
	}
	return text, nil
}

// joinText separates blocks by a blank line, the way they read as one prompt.
func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

func unsupported(where, typ string) error {
	if typ == "" {
		return fmt.Errorf("translate: %s is a content block without a type", where)
	}
	return fmt.Errorf("translate: %s is a %q block, which an openai-chat upstream cannot carry "+
		"(only text, tool_use, tool_result and thinking are translated); use the anthropic upstream for this session", where, typ)
}

// userMessages turns one user turn into role "tool" messages, one per
// tool_result in order, followed by one user message with the text: Chat wants
// the tool answers right after the assistant's calls.
func userMessages(raw json.RawMessage, where string) ([]chatMessage, error) {
	blocks, err := content(raw, where)
	if err != nil {
		return nil, err
	}
	var out []chatMessage
	var text string
	hasText := false
	for j, b := range blocks {
		at := fmt.Sprintf("%s.content[%d]", where, j)
		switch b.Type {
		case "text":
			text, hasText = joinText(text, b.Text), true
		case "tool_result":
			if b.ToolUseID == "" {
				return nil, fmt.Errorf("translate: %s is a tool_result without tool_use_id", at)
			}
			res, err := textOf(b.Content, at)
			if err != nil {
				return nil, err
			}
			if b.IsError {
				res = "Error: " + res
			}
			out = append(out, chatMessage{Role: "tool", Content: &res, ToolCallID: b.ToolUseID})
		default:
			return nil, unsupported(at, b.Type)
		}
	}
	// A turn of only tool results needs no user message; an empty user turn is
	// kept so the conversation keeps its shape.
	if hasText || len(out) == 0 {
		out = append(out, chatMessage{Role: "user", Content: &text})
	}
	return out, nil
}

func assistantMessage(raw json.RawMessage, where string) (chatMessage, error) {
	blocks, err := content(raw, where)
	if err != nil {
		return chatMessage{}, err
	}
	m := chatMessage{Role: "assistant"}
	var text string
	for j, b := range blocks {
		at := fmt.Sprintf("%s.content[%d]", where, j)
		switch b.Type {
		case "text":
			text = joinText(text, b.Text)
		case "thinking", "redacted_thinking":
		case "tool_use":
			if b.ID == "" || b.Name == "" {
				return chatMessage{}, fmt.Errorf("translate: %s is a tool_use without id or name", at)
			}
			args, err := compactObject(b.Input)
			if err != nil {
				return chatMessage{}, fmt.Errorf("translate: %s input: %w", at, err)
			}
			m.ToolCalls = append(m.ToolCalls, chatToolCall{ID: b.ID, Type: "function",
				Function: chatFunction{Name: b.Name, Arguments: args}})
		default:
			return chatMessage{}, unsupported(at, b.Type)
		}
	}
	if text != "" || len(m.ToolCalls) == 0 {
		m.Content = &text
	}
	return m, nil
}

// compactObject is the tool input as Chat's arguments string; a missing input is {}.
func compactObject(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

// marshal encodes without HTML escaping: Claude Code prompts are full of
// <system-reminder> tags, and \u003c would only make them harder to read.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("translate: encode: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// oneLine keeps upstream text short and on one line for error messages.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
