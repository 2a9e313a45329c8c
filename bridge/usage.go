package bridge

import (
	"bytes"

	"github.com/tidwall/gjson"
)

// Usage is what the model service said a response cost, in tokens, as its
// own usage fields report it (Anthropic Messages, OpenAI Responses, Chat
// Completions, streamed or not). InputTokens counts every prompt token,
// cached ones included; CachedInputTokens those read from a prompt cache.
// Responses counts the answers that carried usage at all: requests
// without any are not guessed.
type Usage struct {
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	Responses         int   `json:"responses"`
}

func (u *Usage) add(v Usage) {
	u.InputTokens += v.InputTokens
	u.CachedInputTokens += v.CachedInputTokens
	u.OutputTokens += v.OutputTokens
	u.Responses += v.Responses
}

// Bounds of the tap: one SSE line, and a whole non-streamed body.
const (
	usageLineMax = 1 << 20
	usageBodyMax = 4 << 20
)

// usageTap reads usage out of a relayed response without changing a byte
// of it: relay's copy goes through it (io.TeeReader), line by line for a
// stream, whole for a JSON body. Memory is bounded; an oversized line or
// body is simply not read for usage.
type usageTap struct {
	line      []byte
	skipLine  bool // the current line passed usageLineMax
	body      []byte
	bodyOver  bool
	cur       Usage // the maxima seen so far in this response
	seenUsage bool
}

func (t *usageTap) Write(p []byte) (int, error) {
	if !t.bodyOver {
		if len(t.body)+len(p) > usageBodyMax {
			t.bodyOver, t.body = true, nil
		} else {
			t.body = append(t.body, p...)
		}
	}
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		chunk := rest
		if i >= 0 {
			chunk = rest[:i]
		}
		if !t.skipLine {
			if len(t.line)+len(chunk) > usageLineMax {
				t.skipLine, t.line = true, t.line[:0]
			} else {
				t.line = append(t.line, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !t.skipLine {
			t.event(t.line)
		}
		t.line, t.skipLine = t.line[:0], false
		rest = rest[i+1:]
	}
	return len(p), nil
}

// event reads one SSE data line (or a JSON line).
func (t *usageTap) event(line []byte) {
	line = bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(line), []byte("data:")))
	if len(line) == 0 || line[0] != '{' || !bytes.Contains(line, []byte("usage")) || !gjson.ValidBytes(line) {
		return
	}
	t.from(gjson.ParseBytes(line))
}

// from takes the usage object of one event or body: at the top (Chat,
// non-streamed Messages and Responses), in message (Anthropic's
// message_start) or in response (Responses' response.completed). Counters
// are the maxima over the response's events: Anthropic repeats the input
// in message_start and gives the final output in message_delta.
func (t *usageTap) from(o gjson.Result) {
	for _, path := range []string{"usage", "message.usage", "response.usage"} {
		u := o.Get(path)
		if !u.IsObject() {
			continue
		}
		t.seenUsage = true
		in := u.Get("input_tokens").Int() + u.Get("cache_read_input_tokens").Int() + u.Get("cache_creation_input_tokens").Int()
		if p := u.Get("prompt_tokens"); p.Exists() {
			in = p.Int()
		}
		cached := u.Get("cache_read_input_tokens").Int() + u.Get("input_tokens_details.cached_tokens").Int() + u.Get("prompt_tokens_details.cached_tokens").Int()
		out := u.Get("output_tokens").Int()
		if c := u.Get("completion_tokens"); c.Exists() {
			out = c.Int()
		}
		t.cur.InputTokens = max(t.cur.InputTokens, in)
		t.cur.CachedInputTokens = max(t.cur.CachedInputTokens, cached)
		t.cur.OutputTokens = max(t.cur.OutputTokens, out)
	}
}

// result is the response's usage, nil when it reported none.
func (t *usageTap) result() *Usage {
	if len(t.line) > 0 && !t.skipLine {
		t.event(t.line) // a body without a final newline
	}
	if !t.bodyOver && len(t.body) > 0 && gjson.ValidBytes(t.body) {
		t.from(gjson.ParseBytes(t.body))
	}
	if !t.seenUsage {
		return nil
	}
	u := t.cur
	u.Responses = 1
	return &u
}
