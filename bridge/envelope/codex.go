package envelope

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/trajectory/codex"
)

// Codex is the envelope of `codex exec resume <id> <nonce>` (0.15x–0.17x).
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
type Codex struct {
	tracker
	prefix []json.RawMessage
	want   []any // prefix items decoded, for the slow comparison path
}

// NewCodex returns the envelope for a session whose projection up to the
// boundary is p.
func NewCodex(p *codex.Projection, opts Options) (*Codex, error) {
	if !ValidNonce(opts.Nonce) {
		return nil, fmt.Errorf("codex envelope: nonce %q does not have the shape NewNonce returns", opts.Nonce)
	}
	if len(p.Items) == 0 {
		return nil, fmt.Errorf("codex envelope: the rebuilt session has no model-visible items")
	}
	c := &Codex{tracker: tracker{opts: opts}, prefix: p.Items, want: make([]any, len(p.Items))}
	for i, it := range p.Items {
		v, err := decode(it)
		if err != nil {
			return nil, fmt.Errorf("codex envelope: projection item %d: %w", i, err)
		}
		c.want[i] = v
	}
	return c, nil
}

// Check validates one request and returns the body to forward.
func (c *Codex) Check(ctx context.Context, req *bridge.Request) ([]byte, error) {
	c.checked()
	if req.Route != bridge.RouteResponses {
		return nil, bridge.Refuse("codex talks to /v1/responses only; this request went to the %s route", req.Route)
	}
	fwd, s, err := stripCodex(req.Body, c.prefix, c.want, c.opts.Nonce, c.opts.Prompt)
	if err != nil {
		return nil, err
	}
	live := liveTurns(s.Live)
	if err := c.overBudget(ctx, live); err != nil {
		return nil, err
	}
	c.accepted(codexVariant(s), live, len(s.Live) == 0, c.opts.Prompt != "", len(s.Runtime), s.Context)
	return fwd, nil
}

// CodexSplit is one request's input cut at the envelope.
type CodexSplit struct {
	Runtime []json.RawMessage // the regenerated instructions message
	Prefix  []json.RawMessage // equal to the rebuilt session's projection
	Context []ContextItem     // world-state updates before the nonce
	Nonce   int               // index of the nonce item in input
	Live    []json.RawMessage // after the nonce
}

// StripCodex checks body against the rebuilt session's projection prefix and
// returns the body to forward: the nonce item removed, or replaced by the
// boundary prompt when prompt is not empty. An error is a *bridge.Refusal.
func StripCodex(body []byte, prefix []json.RawMessage, nonce, prompt string) ([]byte, *CodexSplit, error) {
	want := make([]any, len(prefix))
	for i, it := range prefix {
		v, err := decode(it)
		if err != nil {
			return nil, nil, fmt.Errorf("projection item %d: %w", i, err)
		}
		want[i] = v
	}
	return stripCodex(body, prefix, want, nonce, prompt)
}

func stripCodex(body []byte, prefix []json.RawMessage, want []any, nonce, prompt string) ([]byte, *CodexSplit, error) {
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

	s := &CodexSplit{Nonce: k}
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
			if v, err := decode(json.RawMessage(items[j].Raw)); err == nil {
				where = firstDifference(v, want[i], "")
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
	fwd, err := splice(body, in, "["+strings.Join(out, ",")+"]")
	if err != nil {
		return nil, nil, err
	}
	return fwd, s, nil
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

var tagRe = regexp.MustCompile(`^<([a-z][a-z_ ]*)>[\s\S]*</([a-z][a-z_ ]*)>\s*$`)

// contextItem accepts a developer or user message whose every text part is
// one tagged context block (<environment_context>…</environment_context>,
// <skills_instructions>…): what Codex inserts when the world changed.
func contextItem(it gjson.Result) (ContextItem, bool) {
	role := it.Get("role").Str
	if !isMessage(it, role) || (role != "developer" && role != "user") {
		return ContextItem{}, false
	}
	parts := it.Get("content").Array()
	if len(parts) == 0 {
		return ContextItem{}, false
	}
	var text strings.Builder
	tag := ""
	for _, p := range parts {
		m := tagRe.FindStringSubmatch(p.Get("text").Str)
		if p.Get("type").Str != "input_text" || m == nil || m[1] != m[2] {
			return ContextItem{}, false
		}
		if tag == "" {
			tag = m[1]
		}
		text.WriteString(p.Get("text").Str)
	}
	return ContextItem{Role: role, Tag: tag, Length: text.Len(), SHA256: digest(text.String()), Placement: PlacedAfterBoundary}, true
}

// equalItem compares a request item with a projection item: the bytes, or
// failing that the JSON values, where a reasoning item's "content": null
// equals no content (Codex adds the null when it replays stored reasoning).
func equalItem(got gjson.Result, raw json.RawMessage, want any) bool {
	if got.Raw == string(raw) {
		return true
	}
	v, err := decode(json.RawMessage(got.Raw))
	return err == nil && reflect.DeepEqual(v, want)
}

// decode parses an item with numbers kept as written and the reasoning null
// normalised away.
func decode(raw json.RawMessage) (any, error) {
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
		b.WriteString(" call_id " + trim(id))
	}
	if n := it.Get("name").Str; n != "" {
		b.WriteString(" name " + trim(n))
	}
	return b.String()
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func promptItem(prompt string) string {
	return `{"type":"message","role":"user","content":[{"type":"input_text","text":` + JSONString(prompt) + `}]}`
}

// JSONString is s as a JSON string, with HTML characters as they are (the
// way the CLIs write them).
func JSONString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// splice replaces the bytes of v (a value inside body) with repl, leaving
// every other byte of body as it was.
func splice(body []byte, v gjson.Result, repl string) ([]byte, error) {
	start, end := v.Index, v.Index+len(v.Raw)
	if v.Index <= 0 || end > len(body) || string(body[start:end]) != v.Raw {
		return nil, bridge.Refuse("internal error: cannot locate the input array in the request body")
	}
	out := make([]byte, 0, len(body)-len(v.Raw)+len(repl))
	out = append(out, body[:start]...)
	out = append(out, repl...)
	return append(out, body[end:]...), nil
}

// liveTurns counts the model responses past the boundary: runs of model
// items (assistant messages, reasoning, calls) separated by anything else.
func liveTurns(items []json.RawMessage) int {
	n, inRun := 0, false
	for _, raw := range items {
		it := gjson.ParseBytes(raw)
		typ, role := it.Get("type").Str, it.Get("role").Str
		switch {
		case (typ == "message" || typ == "") && role == "assistant", typ == "reasoning", strings.HasSuffix(typ, "_call"):
			if !inRun {
				n++
				inRun = true
			}
		default:
			inRun = false
		}
	}
	return n
}

// codexVariant names the envelope parts one request had: the nonce item,
// after the world-state updates Codex inserted before it, if any.
func codexVariant(s *CodexSplit) string {
	if len(s.Context) > 0 {
		return "context+nonce"
	}
	return "nonce"
}
