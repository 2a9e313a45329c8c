package translate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// chat answer shapes: a chat.completion and a chat.completion.chunk share them.
type chatAnswer struct {
	ID      string       `json:"id"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage"`
	Error   *chatError   `json:"error"`
}

type chatChoice struct {
	Index        int        `json:"index"`
	Message      *chatDelta `json:"message"`
	Delta        *chatDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
}

type chatDelta struct {
	Content   *string `json:"content"`
	ToolCalls []struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type chatError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
}

// anthUsage is Anthropic's usage: input_tokens excludes cache reads.
type anthUsage struct {
	InputTokens          int64 `json:"input_tokens"`
	CacheReadInputTokens int64 `json:"cache_read_input_tokens"`
	OutputTokens         int64 `json:"output_tokens"`
}

func (u *chatUsage) anthropic() anthUsage {
	if u == nil {
		return anthUsage{}
	}
	var cached int64
	if u.PromptTokensDetails != nil {
		cached = u.PromptTokensDetails.CachedTokens
	}
	return anthUsage{InputTokens: u.PromptTokens - cached, CacheReadInputTokens: cached, OutputTokens: u.CompletionTokens}
}

// stopReason maps finish_reason. A server that says "stop" after tool calls still
// wants them run, so calls win.
func stopReason(finish string, calls bool) string {
	switch {
	case calls || finish == "tool_calls" || finish == "function_call":
		return "tool_use"
	case finish == "length":
		return "max_tokens"
	}
	return "end_turn"
}

// messageID makes an Anthropic-looking id from the completion id.
func messageID(chatID string) string {
	if chatID == "" {
		return "msg_translated"
	}
	return "msg_" + strings.TrimPrefix(chatID, "chatcmpl-")
}

// callID invents an id for servers that omit one; it only has to be unique
// within the conversation, and the completion id makes it so.
func callID(chatID string, index int) string {
	return fmt.Sprintf("toolu_%s_%d", strings.TrimPrefix(chatID, "chatcmpl-"), index)
}

type anthBlockOut struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type anthMessageOut struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []anthBlockOut `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        anthUsage      `json:"usage"`
}

// ChatToMessage translates a non-streaming chat.completion into an Anthropic
// message. Tool arguments must be a JSON object: Claude Code could not run a call
// whose input it cannot parse, so a malformed one is an error here rather than
// later.
func ChatToMessage(body []byte) ([]byte, error) {
	var a chatAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("translate: the upstream's answer is not a chat.completion JSON object: %w", err)
	}
	if a.Error != nil {
		return nil, fmt.Errorf("translate: the upstream answered 200 with an error: %s", oneLine(a.Error.Message, 300))
	}
	if len(a.Choices) == 0 || a.Choices[0].Message == nil {
		return nil, errors.New("translate: the upstream's chat.completion has no choices[0].message")
	}
	c := a.Choices[0]
	out := anthMessageOut{ID: messageID(a.ID), Type: "message", Role: "assistant", Model: a.Model,
		Content: []anthBlockOut{}, Usage: a.Usage.anthropic()}
	if t := c.Message.Content; t != nil && *t != "" {
		out.Content = append(out.Content, anthBlockOut{Type: "text", Text: t})
	}
	for i, tc := range c.Message.ToolCalls {
		input, err := argsObject(tc.Function.Arguments)
		if err != nil {
			return nil, fmt.Errorf("translate: tool call %d (%s): %w", i, tc.Function.Name, err)
		}
		id := tc.ID
		if id == "" {
			id = callID(a.ID, i)
		}
		out.Content = append(out.Content, anthBlockOut{Type: "tool_use", ID: id, Name: tc.Function.Name, Input: input})
	}
	reason := stopReason(c.FinishReason, len(c.Message.ToolCalls) > 0)
	out.StopReason = &reason
	return marshal(out)
}

func argsObject(args string) (json.RawMessage, error) {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("arguments are not a JSON object: %s", oneLine(args, 120))
	}
	var b bytes.Buffer
	_ = json.Compact(&b, []byte(args)) // valid: it just decoded
	return b.Bytes(), nil
}

// maxLine bounds one SSE line. Tool arguments arrive in fragments, so lines stay
// small, but a server that sends a whole file as one fragment must not fail at
// bufio's 64 KiB default.
const maxLine = 64 << 20

// StreamToAnthropic reads a Chat Completions SSE stream from r and writes the
// Anthropic Messages SSE events it amounts to to w, flushing after each event
// when w is an http.Flusher. Blocks are opened as their first fragment arrives, so
// nothing is held back. It returns nil once message_stop (or an Anthropic error
// event for an upstream error chunk) is written, and an error when the stream
// breaks off or cannot be translated; the caller must then break its own stream
// so the agent never takes a truncated answer for a complete one.
func StreamToAnthropic(w io.Writer, r io.Reader) error {
	s := &streamer{w: w, open: -1, calls: map[int]*callState{}}
	s.fl, _ = w.(http.Flusher)
	br := bufio.NewReaderSize(r, 64<<10)
	var data []byte
	hasData := false
	for {
		line, err := readLine(br)
		if err != nil {
			if errors.Is(err, io.EOF) && s.finish != "" {
				return s.end() // some servers end after finish_reason without [DONE]
			}
			if errors.Is(err, io.EOF) {
				return errors.New("translate: the upstream stream ended before a finish_reason")
			}
			return fmt.Errorf("translate: read upstream stream: %w", err)
		}
		switch {
		case len(line) == 0:
			if !hasData {
				continue
			}
			done, err := s.event(data)
			if err != nil || done {
				return err
			}
			data, hasData = data[:0], false
		case line[0] == ':':
			// A keep-alive: pass it on, because Claude Code's idle watchdog counts
			// the bytes it receives. Anthropic's own ping event only comes after
			// message_start, so before it the comment travels as a comment.
			if err := s.keepAlive(); err != nil {
				return err
			}
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if hasData {
				data = append(data, '\n')
			}
			data, hasData = append(data, v...), true
		}
	}
}

// readLine returns one line without its \n or \r\n.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > maxLine {
				return nil, fmt.Errorf("an SSE line is over %d bytes", maxLine)
			}
			continue
		}
		if errors.Is(err, io.EOF) && len(line) > 0 {
			break // a last line without newline still counts
		}
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

type callState struct {
	block   int // Anthropic block index once started
	id      string
	name    string
	pending []byte // arguments that came before the name
	started bool
}

type streamer struct {
	w  io.Writer
	fl http.Flusher

	started bool
	id      string
	next    int // next Anthropic block index
	open    int // open block index, -1 for none
	text    bool
	calls   map[int]*callState
	order   []int
	finish  string
	usage   *chatUsage
}

// event handles one data payload; done reports the end of the stream.
func (s *streamer) event(data []byte) (done bool, err error) {
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		return true, s.end()
	}
	var c chatAnswer
	if err := json.Unmarshal(data, &c); err != nil {
		return false, fmt.Errorf("translate: an upstream stream event is not a chat.completion.chunk: %w", err)
	}
	if c.Error != nil {
		// Mid-stream errors get Anthropic's error event, which ends the stream.
		typ := "api_error"
		if strings.Contains(c.Error.Type, "rate") {
			typ = "rate_limit_error"
		}
		return true, s.emit("error", map[string]any{"type": "error",
			"error": map[string]string{"type": typ, "message": c.Error.Message}})
	}
	if err := s.start(c); err != nil {
		return false, err
	}
	if c.Usage != nil {
		s.usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 || ch.Delta == nil && ch.FinishReason == "" {
			continue // n>1 is never asked for; other choices are not this answer
		}
		if d := ch.Delta; d != nil {
			if d.Content != nil && *d.Content != "" {
				if err := s.textDelta(*d.Content); err != nil {
					return false, err
				}
			}
			for _, tc := range d.ToolCalls {
				if err := s.callDelta(tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments); err != nil {
					return false, err
				}
			}
		}
		if ch.FinishReason != "" {
			s.finish = ch.FinishReason
		}
	}
	return false, nil
}

func (s *streamer) start(c chatAnswer) error {
	if s.started {
		return nil
	}
	s.started, s.id = true, c.ID
	return s.emit("message_start", map[string]any{"type": "message_start", "message": anthMessageOut{
		ID: messageID(c.ID), Type: "message", Role: "assistant", Model: c.Model, Content: []anthBlockOut{}}})
}

func (s *streamer) textDelta(t string) error {
	if !s.text {
		if err := s.closeBlock(); err != nil {
			return err
		}
		empty := ""
		if err := s.openBlock(anthBlockOut{Type: "text", Text: &empty}); err != nil {
			return err
		}
		s.text = true
	}
	return s.emit("content_block_delta", map[string]any{"type": "content_block_delta", "index": s.open,
		"delta": map[string]string{"type": "text_delta", "text": t}})
}

func (s *streamer) callDelta(index int, id, name, args string) error {
	c := s.calls[index]
	if c == nil {
		c = &callState{}
		s.calls[index] = c
		s.order = append(s.order, index)
	}
	if c.id == "" && id != "" {
		c.id = id
	}
	if c.name == "" && name != "" {
		c.name = name
	}
	if !c.started {
		c.pending = append(c.pending, args...)
		if c.name == "" {
			return nil
		}
		if c.id == "" {
			c.id = callID(s.id, index)
		}
		if err := s.closeBlock(); err != nil {
			return err
		}
		if err := s.openBlock(anthBlockOut{Type: "tool_use", ID: c.id, Name: c.name, Input: json.RawMessage(`{}`)}); err != nil {
			return err
		}
		c.block, c.started = s.open, true
		args, c.pending = string(c.pending), nil
	} else if c.block != s.open && args != "" {
		// Anthropic streams one block at a time; re-ordering would mean holding the
		// whole answer back.
		return fmt.Errorf("translate: the upstream interleaved the arguments of tool call %d with a later block", index)
	}
	if args == "" {
		return nil
	}
	return s.emit("content_block_delta", map[string]any{"type": "content_block_delta", "index": c.block,
		"delta": map[string]string{"type": "input_json_delta", "partial_json": args}})
}

func (s *streamer) openBlock(b anthBlockOut) error {
	s.open = s.next
	s.next++
	return s.emit("content_block_start", map[string]any{"type": "content_block_start", "index": s.open, "content_block": b})
}

func (s *streamer) closeBlock() error {
	if s.open < 0 {
		return nil
	}
	i := s.open
	s.open, s.text = -1, false
	return s.emit("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
}

func (s *streamer) end() error {
	if !s.started {
		return errors.New("translate: the upstream stream ended without a single chunk")
	}
	for _, i := range s.order {
		if c := s.calls[i]; !c.started {
			return fmt.Errorf("translate: the upstream never named tool call %d", i)
		}
	}
	if err := s.closeBlock(); err != nil {
		return err
	}
	reason := stopReason(s.finish, len(s.calls) > 0)
	if err := s.emit("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": reason, "stop_sequence": nil}, "usage": s.usage.anthropic()}); err != nil {
		return err
	}
	return s.emit("message_stop", map[string]string{"type": "message_stop"})
}

func (s *streamer) keepAlive() error {
	if s.started {
		return s.emit("ping", map[string]string{"type": "ping"})
	}
	if _, err := io.WriteString(s.w, ": keep-alive\n\n"); err != nil {
		return err
	}
	if s.fl != nil {
		s.fl.Flush()
	}
	return nil
}

func (s *streamer) emit(name string, v any) error {
	data, err := marshal(v)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.Grow(len(name) + len(data) + 16)
	b.WriteString("event: ")
	b.WriteString(name)
	b.WriteString("\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, err := s.w.Write(b.Bytes()); err != nil {
		return err
	}
	if s.fl != nil {
		s.fl.Flush()
	}
	return nil
}

// ErrorToAnthropic rewrites an upstream error body (OpenAI's {"error":{…}},
// vLLM's {"object":"error","message":…}, FastAPI's {"detail":…} or plain text)
// into Anthropic's error JSON with a type that matches status, which is what
// Claude Code's retry logic reads.
func ErrorToAnthropic(status int, body []byte) []byte {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	msg := ""
	if json.Unmarshal(body, &e) == nil {
		var inner chatError
		switch {
		case len(e.Error) > 0 && json.Unmarshal(e.Error, &inner) == nil && inner.Message != "":
			msg = inner.Message
		case len(e.Error) > 0 && e.Error[0] == '"':
			_ = json.Unmarshal(e.Error, &msg)
		case e.Message != "":
			msg = e.Message
		case len(e.Detail) > 0:
			msg = string(e.Detail)
			_ = json.Unmarshal(e.Detail, &msg)
		}
	}
	if msg == "" {
		msg = oneLine(string(body), 1000)
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	out, _ := marshal(map[string]any{"type": "error", "error": map[string]string{
		"type": anthropicErrorType(status), "message": "openai-chat upstream: " + msg}})
	return out
}

func anthropicErrorType(status int) string {
	switch status {
	case 400, 422:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 503, 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}
