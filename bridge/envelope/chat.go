package envelope

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
)

// ChatRules are what differs between the agents that resume over Chat
// Completions; each agent's folder has its own.
type ChatRules struct {
	// Nonce says whether message m is the resume nonce, in the forms the
	// CLI sends it.
	Nonce func(m gjson.Result, nonce string) bool
	// Prompt is the user message that carries a boundary prompt, in the
	// CLI's own shape.
	Prompt func(p string) string
	// Synthetic, when set, is a message the CLI may regenerate between the
	// boundary and the nonce on every request; it is removed with the nonce.
	Synthetic string
	// SideCalls lets tool-less requests without assistant or tool messages
	// through.
	SideCalls bool
	// AfterNonce, when set, says whether a user message right after the
	// nonce is one the CLI adds to the resumed prompt (Kimi Code's
	// permission-mode reminder, and its date-change reminder when the
	// session was written on another day); the run of such messages is
	// removed with the nonce.
	AfterNonce func(m gjson.Result) bool
}

// Chat is the envelope shared by Chat Completions agents: every request
// is the projection of the rebuilt session up to the boundary (after the
// system message), the nonce where the CLI resumed, and what the run added
// live; the nonce (or the boundary prompt in its place) is the only change.
type Chat struct {
	*Tracker
	agent  string
	rules  ChatRules
	prefix []json.RawMessage
	want   []any
}

// NewChat returns agent's envelope for a session whose projection up to the
// boundary is prefix.
func NewChat(agent string, prefix []json.RawMessage, opts Options, rules ChatRules) (*Chat, error) {
	if !ValidNonce(opts.Nonce) {
		return nil, fmt.Errorf("%s envelope: nonce %q does not have the shape NewNonce returns", agent, opts.Nonce)
	}
	if len(prefix) == 0 {
		return nil, fmt.Errorf("%s envelope: the rebuilt session has no model-visible messages", agent)
	}
	want, err := decodeChatPrefix(agent, prefix)
	if err != nil {
		return nil, err
	}
	return &Chat{Tracker: NewTracker(opts), agent: agent, rules: rules, prefix: prefix, want: want}, nil
}

// decodeChatPrefix decodes a projection's messages once, for equalChat.
func decodeChatPrefix(agent string, prefix []json.RawMessage) ([]any, error) {
	want := make([]any, len(prefix))
	for i, it := range prefix {
		v, err := decodeChat(it)
		if err != nil {
			return nil, fmt.Errorf("%s envelope: projection message %d: %w", agent, i, err)
		}
		want[i] = v
	}
	return want, nil
}

// ChatSplit is one request's messages cut at the envelope.
type ChatSplit struct {
	Side      bool // a side call, forwarded without the conversation check
	Nonce     int  // index of the nonce message in messages; -1 for a side call without it
	Synthetic bool // the CLI's synthetic message before the nonce was removed
	Live      []json.RawMessage
}

// Check validates one request and returns the body to forward.
func (c *Chat) Check(ctx context.Context, req *bridge.Request) ([]byte, error) {
	c.Checked()
	if req.Route != bridge.RouteChat {
		return nil, bridge.Refuse("%s talks to /v1/chat/completions only; this request went to the %s route", c.agent, req.Route)
	}
	fwd, s, err := c.Strip(req.Body)
	if err != nil {
		return nil, err
	}
	if s.Side {
		return fwd, nil
	}
	live := chatTurns(s.Live)
	if err := c.OverBudget(ctx, live); err != nil {
		return nil, err
	}
	variant := "nonce"
	if s.Synthetic {
		variant = "synthetic-answer+nonce"
	}
	c.Accepted(variant, live, len(s.Live) == 0, c.opts.Prompt != "", 1, nil)
	return fwd, nil
}

// Strip checks one request body and returns the body to forward and where
// the envelope sat. An error is a *bridge.Refusal.
func (c *Chat) Strip(body []byte) ([]byte, *ChatSplit, error) {
	if !gjson.ValidBytes(body) {
		return nil, nil, bridge.Refuse("the request body is not valid JSON")
	}
	msgs := gjson.GetBytes(body, "messages")
	if !msgs.IsArray() {
		return nil, nil, bridge.Refuse("the request has no messages array; %s sends the whole history as messages", c.agent)
	}
	items := msgs.Array()
	nonce := c.opts.Nonce
	k := -1
	for i, m := range items {
		if m.Get("role").Str == "user" && c.rules.Nonce(m, nonce) {
			if k >= 0 {
				return nil, nil, bridge.Refuse("the resume nonce appears as messages %d and %d; it must be there once", k, i)
			}
			k = i
		}
	}
	n := bytes.Count(body, []byte(nonce))
	if c.rules.SideCalls && isSideCall(body, items) {
		if n > 1 || (n == 1 && k < 0) {
			return nil, nil, bridge.Refuse("a side call (no tools) carries the resume nonce outside its own message")
		}
		s := &ChatSplit{Side: true, Nonce: k}
		if k < 0 {
			return body, s, nil
		}
		fwd, err := c.rebuild(body, msgs, items, k, -1, false, k+1)
		return fwd, s, err
	}
	switch {
	case k < 0 && n == 0:
		return nil, nil, bridge.Refuse("the request carries no resume nonce: it is not the resumed conversation this bridge serves")
	case k < 0:
		return nil, nil, bridge.Refuse("the resume nonce appears in the request, but not as its own user message")
	case n != 1:
		return nil, nil, bridge.Refuse("the resume nonce appears %d times in the request; only its user message may hold it", n)
	}
	if len(items) == 0 || items[0].Get("role").Str != "system" {
		return nil, nil, bridge.Refuse("messages[0] is not the system message %s regenerates", c.agent)
	}
	off := 1
	for i := range c.prefix {
		j := off + i
		if j >= k {
			return nil, nil, bridge.Refuse("the request holds %d messages before the resume nonce; the rebuilt session has %d: the history ends before the boundary", k-off, len(c.prefix))
		}
		if !equalChat(items[j], c.prefix[i], c.want[i]) {
			return nil, nil, bridge.Refuse("message %d (%s) differs from message %d of the rebuilt session (%s)", j, describeChat(items[j]), i, describeChat(gjson.ParseBytes(c.prefix[i])))
		}
	}
	s := &ChatSplit{Nonce: k}
	syn := -1
	switch gap := k - (off + len(c.prefix)); {
	case gap == 1 && c.rules.Synthetic != "" && equalJSON(items[k-1].Raw, c.rules.Synthetic):
		syn, s.Synthetic = k-1, true
	case gap != 0:
		return nil, nil, bridge.Refuse("message %d (%s) sits between the boundary result and the resume nonce", off+len(c.prefix), describeChat(items[off+len(c.prefix)]))
	}
	after := k + 1
	for c.rules.AfterNonce != nil && after < len(items) && items[after].Get("role").Str == "user" && c.rules.AfterNonce(items[after]) {
		after++
	}
	for _, it := range items[after:] {
		s.Live = append(s.Live, json.RawMessage(it.Raw))
	}
	fwd, err := c.rebuild(body, msgs, items, k, syn, c.opts.Prompt != "", after)
	return fwd, s, err
}

// rebuild drops message k, syn (when ≥ 0) and the messages after k up to
// (not including) after, putting the boundary prompt at k when asked.
func (c *Chat) rebuild(body []byte, msgs gjson.Result, items []gjson.Result, k, syn int, prompt bool, after int) ([]byte, error) {
	out := make([]string, 0, len(items))
	for i, it := range items {
		switch {
		case i == syn, i > k && i < after:
		case i != k:
			out = append(out, it.Raw)
		case prompt:
			out = append(out, c.rules.Prompt(c.opts.Prompt))
		}
	}
	return Splice(body, msgs, "["+strings.Join(out, ",")+"]")
}

// isSideCall: no tools on offer and no assistant or tool message, so the
// request cannot carry the resumed conversation.
func isSideCall(body []byte, items []gjson.Result) bool {
	if t := gjson.GetBytes(body, "tools"); t.Exists() && len(t.Array()) > 0 {
		return false
	}
	for _, m := range items {
		if r := m.Get("role").Str; r == "assistant" || r == "tool" {
			return false
		}
	}
	return true
}

func equalChat(got gjson.Result, raw json.RawMessage, want any) bool {
	if got.Raw == string(raw) {
		return true
	}
	v, err := decodeChat(json.RawMessage(got.Raw))
	return err == nil && reflect.DeepEqual(v, want)
}

func equalJSON(a, b string) bool {
	va, err1 := decodeChat(json.RawMessage(a))
	vb, err2 := decodeChat(json.RawMessage(b))
	return err1 == nil && err2 == nil && reflect.DeepEqual(va, vb)
}

func decodeChat(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// describeChat names a message for a refusal without quoting its content.
func describeChat(m gjson.Result) string {
	var b strings.Builder
	b.WriteString("role " + Clip(m.Get("role").Str))
	if id := m.Get("tool_call_id").Str; id != "" {
		b.WriteString(" tool_call_id " + Clip(id))
	}
	if n := len(m.Get("tool_calls").Array()); n > 0 {
		fmt.Fprintf(&b, " with %d tool call(s)", n)
	}
	return b.String()
}

// chatTurns counts the assistant messages past the boundary: one per model
// response.
func chatTurns(items []json.RawMessage) int {
	n := 0
	for _, raw := range items {
		if gjson.GetBytes(raw, "role").Str == "assistant" {
			n++
		}
	}
	return n
}
