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
// of it: relay hands it every chunk after the chunk has left for the client,
// line by line for a stream, whole for a JSON body. Memory is bounded; an
// oversized line or body is simply not read for usage. Complete lines are
// read where they lie; only a line cut by a chunk's end is copied, and only if
// it can be a data line: a stream's bytes are not copied a second time.
type usageTap struct {
	line     []byte
	skipLine bool // the current line passed usageLineMax or cannot carry usage
	// kind is decided by the body's first non-space byte: a JSON body ('{') is
	// kept whole, a stream is not kept at all.
	kind      tapKind
	body      []byte
	bodyOver  bool
	cur       Usage // the maxima seen so far in this response
	seenUsage bool
	// ended: the event that ends a stream by its protocol ([DONE], message_stop,
	// a terminal response.* event) reached the client. A client may close the
	// connection as soon as it has it, before the upstream's own end arrives;
	// the answer reached it in full all the same.
	ended bool
	// lost: relay showed the tap bytes whose write to the client failed, so
	// an end event from here on may not have reached it.
	lost bool
}

type tapKind uint8

const (
	tapUnknown tapKind = iota
	tapJSON
	tapStream
)

func (t *usageTap) Write(p []byte) (int, error) {
	if t.kind == tapUnknown {
		if i := bytes.IndexFunc(p, func(r rune) bool { return !isSpace(r) }); i >= 0 {
			t.kind = tapStream
			if p[i] == '{' {
				t.kind = tapJSON
			}
		}
	}
	if t.kind == tapJSON && !t.bodyOver {
		if len(t.body)+len(p) > usageBodyMax {
			t.bodyOver, t.body = true, nil
		} else {
			t.body = append(t.body, p...)
		}
	}
	rest := p
	if len(t.line) > 0 || t.skipLine {
		// The line the last chunk cut continues here.
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			t.carry(rest)
			return len(p), nil
		}
		t.carry(rest[:i])
		if !t.skipLine {
			t.event(t.line)
		}
		t.line, t.skipLine = t.line[:0], false
		rest = rest[i+1:]
	}
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			t.carry(rest)
			break
		}
		if i <= usageLineMax {
			t.event(rest[:i])
		}
		rest = rest[i+1:]
	}
	return len(p), nil
}

// carry keeps the start of a line the chunk cut, unless it is too long or does
// not begin the way a data line (or a JSON line) does.
func (t *usageTap) carry(b []byte) {
	if t.skipLine {
		return
	}
	if len(t.line) == 0 {
		if i := bytes.IndexFunc(b, func(r rune) bool { return !isSpace(r) }); i >= 0 && !mayHoldJSON(b[i:]) {
			t.skipLine = true
			return
		}
	}
	if len(t.line)+len(b) > usageLineMax {
		t.skipLine, t.line = true, t.line[:0]
		return
	}
	t.line = append(t.line, b...)
}

// mayHoldJSON reports whether a line that begins with p (from its first
// non-space byte) can be one event reads: a JSON line, or a data line whose
// value starts with '{' (or is Chat's closing [DONE]). Without this, a long data line of anything else
// (the bulk of a stream can be such lines) would be copied whenever a read
// cuts it, only to be dropped at its end. A start too short to tell is kept.
func mayHoldJSON(p []byte) bool {
	const data, done = "data:", "[DONE]"
	switch {
	case p[0] == '{':
		return true
	case len(p) < len(data):
		return data[:len(p)] == string(p)
	case string(p[:len(data)]) != data:
		return false
	}
	v := bytes.TrimFunc(p[len(data):], isSpace)
	return len(v) == 0 || v[0] == '{' || (len(v) <= len(done) && done[:len(v)] == string(v))
}

// isSpace is the white space bytes.TrimSpace removes from ASCII text.
func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
}

// undelivered tells the tap that the bytes it is shown next may not have
// reached the client (relay's write of them failed).
func (t *usageTap) undelivered() { t.lost = true }

// event reads one SSE data line (or a JSON line).
func (t *usageTap) event(line []byte) {
	line = bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(line), []byte("data:")))
	if !t.ended && !t.lost && endsStream(line) {
		t.ended = true
	}
	if len(line) == 0 || line[0] != '{' || !bytes.Contains(line, []byte("usage")) || !gjson.ValidBytes(line) {
		return
	}
	t.from(gjson.ParseBytes(line))
}

// endsStream reports whether a data value completes the answer of a stream
// in one of the bridge's protocols: Anthropic's message_stop, the Responses
// events after which nothing follows, and in Chat the chunk that gives the
// finish_reason (only the usage chunk and [DONE] may follow it, and clients
// differ in whether they wait for those). The substring tests keep the JSON
// parse off the stream's bulk.
func endsStream(v []byte) bool {
	if string(v) == "[DONE]" {
		return true
	}
	if len(v) == 0 || v[0] != '{' {
		return false
	}
	if bytes.Contains(v, []byte(`"finish_reason"`)) {
		if r := gjson.GetBytes(v, "choices.0.finish_reason"); r.Type == gjson.String && r.Str != "" {
			return true
		}
	}
	if !bytes.Contains(v, []byte(`"message_stop"`)) && !bytes.Contains(v, []byte(`"response.`)) {
		return false
	}
	switch gjson.GetBytes(v, "type").Str {
	case "message_stop", "response.completed", "response.incomplete", "response.failed":
		return true
	}
	return false
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
