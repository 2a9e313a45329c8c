package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
)

// Envelope is the envelope of `codex exec resume <id> <nonce>` (0.15x–0.17x).
//
// Every request Codex sends on the resumed thread re-sends the whole history:
//
//	input[0]            developer message with the base instructions, regenerated
//	                    by every launch (its id and text are Codex's own)
//	prefix              the rebuilt rollout's model-visible items, ending at O′N
//	context items       0 or more world-state updates Codex inserts when the
//	                    resumed environment differs (<environment_context>, …)
//	nonce               {"type":"message","role":"user","content":[{"type":"input_text","text":N}]}
//	live items          what the model and the tools added since (later requests)
//
// The check requires exactly that shape: the prefix item for item equal to the
// projection (a stored reasoning item may gain "content": null, as Codex
// writes it on resume), context items shaped as tagged context blocks, and the
// nonce exactly once in the whole body. The forwarded input drops the nonce,
// or puts the boundary prompt in its place, and keeps every other byte of the
// body as Codex sent it.
type Envelope struct {
	*envelope.Tracker
	prefix []json.RawMessage
	want   []any // prefix items decoded, for the slow comparison path
}

// NewEnvelope returns the envelope for a session whose projection up to the
// boundary is p.
func NewEnvelope(p *Projection, opts envelope.Options) (*Envelope, error) {
	if !envelope.ValidNonce(opts.Nonce) {
		return nil, fmt.Errorf("codex envelope: nonce %q does not have the shape NewNonce returns", opts.Nonce)
	}
	if len(p.Items) == 0 {
		return nil, fmt.Errorf("codex envelope: the rebuilt session has no model-visible items")
	}
	c := &Envelope{Tracker: envelope.NewTracker(opts), prefix: p.Items, want: make([]any, len(p.Items))}
	for i, it := range p.Items {
		v, err := decodeItem(it)
		if err != nil {
			return nil, fmt.Errorf("codex envelope: projection item %d: %w", i, err)
		}
		c.want[i] = v
	}
	return c, nil
}

// Check validates one request and returns the body to forward.
func (c *Envelope) Check(ctx context.Context, req *bridge.Request) ([]byte, error) {
	c.Checked()
	if req.Route != bridge.RouteResponses {
		return nil, bridge.Refuse("codex talks to /v1/responses only; this request went to the %s route", req.Route)
	}
	opts := c.Options()
	fwd, s, err := stripEnvelope(req.Body, c.prefix, c.want, opts.Nonce, opts.Prompt)
	if err != nil {
		return nil, err
	}
	live := envelope.LiveTurns(s.Live)
	if err := c.OverBudget(ctx, live); err != nil {
		return nil, err
	}
	c.Accepted(s.variant(), live, len(s.Live) == 0, opts.Prompt != "", len(s.Runtime), s.Context)
	return fwd, nil
}

// EnvelopeSplit is one request's input cut at the envelope.
type EnvelopeSplit struct {
	Runtime []json.RawMessage      // the regenerated instructions message
	Prefix  []json.RawMessage      // equal to the rebuilt session's projection
	Context []envelope.ContextItem // world-state updates before the nonce
	Nonce   int                    // index of the nonce item in input
	Live    []json.RawMessage      // after the nonce
}

// StripEnvelope checks body against the rebuilt session's projection prefix and
// returns the body to forward: the nonce item removed, or replaced by the
// boundary prompt when prompt is not empty. An error is a *bridge.Refusal.
func StripEnvelope(body []byte, prefix []json.RawMessage, nonce, prompt string) ([]byte, *EnvelopeSplit, error) {
	want := make([]any, len(prefix))
	for i, it := range prefix {
		v, err := decodeItem(it)
		if err != nil {
			return nil, nil, fmt.Errorf("projection item %d: %w", i, err)
		}
		want[i] = v
	}
	return stripEnvelope(body, prefix, want, nonce, prompt)
}

func stripEnvelope(body []byte, prefix []json.RawMessage, want []any, nonce, prompt string) ([]byte, *EnvelopeSplit, error) {
	if !gjson.ValidBytes(body) {
		return nil, nil, bridge.Refuse("the request body is not valid JSON")
	}
	in := gjson.GetBytes(body, "input")
	if !in.IsArray() {
		return nil, nil, bridge.Refuse("the request has no input array; codex sends the whole history as input")
	}
	items := in.Array()
	k := -1
	for i, it := range items {
		if isNonceItem(it, nonce) {
			if k >= 0 {
				return nil, nil, bridge.Refuse("the resume nonce appears as input items %d and %d; it must be there once", k, i)
			}
			k = i
		}
	}
	switch n := bytes.Count(body, []byte(nonce)); {
	case k < 0 && n == 0:
		return nil, nil, bridge.Refuse("the request carries no resume nonce: it is not the resumed conversation this bridge serves")
	case k < 0:
		return nil, nil, bridge.Refuse("the resume nonce appears in the request, but not as its own user message")
	case n != 1:
		return nil, nil, bridge.Refuse("the resume nonce appears %d times in the request; only its user message may hold it", n)
	}

	if compacted(items) {
		return nil, nil, compactionRefusal(len(prompt))
	}
	s := &EnvelopeSplit{Nonce: k}
	off := 0
	if len(items) > 0 && !equalItem(items[0], prefix[0], want[0]) {
		if !isMessage(items[0], "developer") {
			return nil, nil, bridge.Refuse("input item 0 is neither the base instructions message codex regenerates nor the rebuilt session's first item (%s)", describe(items[0]))
		}
		s.Runtime = append(s.Runtime, json.RawMessage(items[0].Raw))
		off = 1
	}
	for i := range prefix {
		j := off + i
		if j >= k {
			return nil, nil, bridge.Refuse("the request holds %d items before the resume nonce; the rebuilt session has %d: the history ends before the boundary", k-off, len(prefix))
		}
		if !equalItem(items[j], prefix[i], want[i]) {
			where := "an undecodable item"
			if v, err := decodeItem(json.RawMessage(items[j].Raw)); err == nil {
				where = envelope.FirstDifference(v, want[i], "")
			}
			return nil, nil, bridge.Refuse("input item %d (%s) differs from item %d of the rebuilt session (%s) at %s", j, describe(items[j]), i, describe(gjson.ParseBytes(prefix[i])), where)
		}
		s.Prefix = append(s.Prefix, json.RawMessage(items[j].Raw))
	}
	for j := off + len(prefix); j < k; j++ {
		ci, ok := contextItem(items[j])
		if !ok {
			return nil, nil, bridge.Refuse("input item %d (%s) sits between the boundary result and the resume nonce and is not a context update", j, describe(items[j]))
		}
		s.Context = append(s.Context, ci)
	}
	for _, it := range items[k+1:] {
		s.Live = append(s.Live, json.RawMessage(it.Raw))
	}

	out := make([]string, 0, len(items))
	for i, it := range items {
		switch {
		case i != k:
			out = append(out, it.Raw)
		case prompt != "":
			out = append(out, promptItem(prompt))
		}
	}
	fwd, err := envelope.Splice(body, in, "["+strings.Join(out, ",")+"]")
	if err != nil {
		return nil, nil, err
	}
	return fwd, s, nil
}

// summaryPrefix opens the user message in which Codex 0.171 hands a
// compacted conversation to the model: once its token count passes the
// auto-compaction limit, Codex summarises the history and sends the initial
// context, the user messages and that summary instead of the history.
const summaryPrefix = "Another language model started to solve this problem and produced a summary of its thinking process."

// compacted reports whether the request carries Codex's compaction summary.
func compacted(items []gjson.Result) bool {
	for _, it := range items {
		if !isMessage(it, "user") {
			continue
		}
		for _, p := range it.Get("content").Array() {
			if p.Get("type").Str == "input_text" && strings.HasPrefix(p.Get("text").Str, summaryPrefix) {
				return true
			}
		}
	}
	return false
}

// compactionRefusal names why a compacted history cannot continue: the
// rebuilt session is what the bridge checks every request against, and a
// summary replaces it. The model's usage counts the boundary prompt (Codex
// never sees it), so a long prompt is the usual cause.
func compactionRefusal(promptBytes int) *bridge.Refusal {
	why := "the conversation passed the model's token limit"
	if promptBytes > 0 {
		why = fmt.Sprintf("the conversation with the %d-byte boundary prompt passed the model's token limit", promptBytes)
	}
	return bridge.Refuse("codex compacted its history (its auto-compaction: %s) and sent a summary instead of the rebuilt session, which the bridge can no longer check; use a shorter boundary prompt (at about 4 bytes a token, it must fit the model's context window with the history) or an earlier --after-step", why)
}

// isNonceItem: a user message whose only content is the nonce, as a plain
// string or as one input_text part.
func isNonceItem(it gjson.Result, nonce string) bool {
	if !it.IsObject() || !isMessage(it, "user") {
		return false
	}
	c := it.Get("content")
	if c.Type == gjson.String {
		return c.Str == nonce
	}
	parts := c.Array()
	return c.IsArray() && len(parts) == 1 && parts[0].Get("type").Str == "input_text" && parts[0].Get("text").Str == nonce
}

func isMessage(it gjson.Result, role string) bool {
	typ := it.Get("type")
	return (!typ.Exists() || typ.Str == "message") && it.Get("role").Str == role
}

var tagRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^<([a-z][a-z_ ]*)>[\s\S]*</([a-z][a-z_ ]*)>\s*$`) })

// contextItem accepts a developer or user message whose every text part is
// one tagged context block (<environment_context>…</environment_context>,
// <skills_instructions>…): what Codex inserts when the world changed.
func contextItem(it gjson.Result) (envelope.ContextItem, bool) {
	role := it.Get("role").Str
	if !isMessage(it, role) || (role != "developer" && role != "user") {
		return envelope.ContextItem{}, false
	}
	parts := it.Get("content").Array()
	if len(parts) == 0 {
		return envelope.ContextItem{}, false
	}
	var text strings.Builder
	tag := ""
	for _, p := range parts {
		m := tagRe().FindStringSubmatch(p.Get("text").Str)
		if p.Get("type").Str != "input_text" || m == nil || m[1] != m[2] {
			return envelope.ContextItem{}, false
		}
		if tag == "" {
			tag = m[1]
		}
		text.WriteString(p.Get("text").Str)
	}
	return envelope.ContextItem{Role: role, Tag: tag, Length: text.Len(), SHA256: envelope.Digest(text.String()), Placement: envelope.PlacedAfterBoundary}, true
}

// equalItem compares a request item with a projection item: the bytes, or
// failing that the JSON values, where a reasoning item's "content": null
// equals no content (Codex adds the null when it replays stored reasoning).
func equalItem(got gjson.Result, raw json.RawMessage, want any) bool {
	if got.Raw == string(raw) {
		return true
	}
	v, err := decodeItem(json.RawMessage(got.Raw))
	return err == nil && reflect.DeepEqual(v, want)
}

// decode parses an item with numbers kept as written and the reasoning null
// normalised away.
func decodeItem(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok && m["type"] == "reasoning" {
		if c, has := m["content"]; has && c == nil {
			delete(m, "content")
		}
	}
	return v, nil
}

// describe names an item for a refusal without quoting its content.
func describe(it gjson.Result) string {
	typ := it.Get("type").Str
	if typ == "" {
		typ = "message"
	}
	var b strings.Builder
	b.WriteString(typ)
	if r := it.Get("role").Str; r != "" {
		b.WriteString(" role " + r)
	}
	if id := it.Get("call_id").Str; id != "" {
		b.WriteString(" call_id " + envelope.Clip(id))
	}
	if n := it.Get("name").Str; n != "" {
		b.WriteString(" name " + envelope.Clip(n))
	}
	return b.String()
}

func promptItem(prompt string) string {
	return `{"type":"message","role":"user","content":[{"type":"input_text","text":` + envelope.JSONString(prompt) + `}]}`
}

// variant names the envelope parts one request had: the nonce item, after
// the world-state updates Codex inserted before it, if any.
func (s *EnvelopeSplit) variant() string {
	if len(s.Context) > 0 {
		return "context+nonce"
	}
	return "nonce"
}
