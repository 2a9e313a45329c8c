package envelope

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/trajectory/claude"
)

// Claude is the envelope of `claude --resume <id> --print` with the nonce on
// stdin (2.1.197). A print-mode resume of a session that ends at a tool
// result cannot start without a prompt; Claude Code then closes the
// interrupted turn itself, and every request of the run holds:
//
//	M[0 … k-3]   the stored history (the first user message prefixed with the
//	             context reminder the CLI regenerates at every launch; role
//	             "system" messages rendered from attachments anywhere)
//	M[k-2]       the boundary tool results, plus a text block with the resume
//	             prompt (CLAUDE_CODE_RESUME_PROMPT, set to the per-run
//	             ClaudeMarker so the match is exact)
//	M[k-1]       assistant "No response requested." (written by the CLI)
//	M[k]         user: the nonce (a block array with cache_control while it is
//	             the last message, a plain string afterwards)
//	M[k+1 …]     what the model and the tools added since (later requests)
//
// The check requires exactly that shape, the history equal to the rebuilt
// session's projection message for message (claude.Canonical form; runtime
// items are recognised by shape, counted and forwarded unchanged), and the
// nonce and the marker once each in the whole body. The forwarded messages
// drop the marker block, the synthetic answer and the nonce, put the
// boundary prompt where the marker was (when one was asked for), and on the
// first request move the nonce's cache breakpoint back onto the last
// boundary block, where the CLI had it when it recorded the session.
type Claude struct {
	tracker
	prefix       []json.RawMessage
	boundary     []string
	expectMarker bool
}

// noResponse is the assistant text Claude Code writes to close an
// interrupted turn before a new prompt.
const noResponse = "No response requested."

// ClaudeMarker is the resume prompt a run sets in CLAUDE_CODE_RESUME_PROMPT:
// derived from the nonce, so it is as unique as the nonce and needs no state
// of its own.
func ClaudeMarker(nonce string) string {
	return "__PVISOR_RESUME_MARKER_" + strings.TrimSuffix(strings.TrimPrefix(nonce, noncePrefix), nonceSuffix) + "__"
}

// promptlessTools are the boundary tools after whose (non-error) results
// Claude Code adds no resume prompt (2.1.197's interrupted-turn detection).
var promptlessTools = map[string]bool{"SendUserMessage": true, "Brief": true, "SendUserFile": true}

// NewClaude returns the envelope for a session whose projection up to the
// boundary is p; p must end with the boundary tool results.
func NewClaude(p *claude.Projection, opts Options) (*Claude, error) {
	if !ValidNonce(opts.Nonce) {
		return nil, fmt.Errorf("claude envelope: nonce %q does not have the shape NewNonce returns", opts.Nonce)
	}
	if len(p.Messages) < 2 || len(p.BoundaryIDs) == 0 {
		return nil, fmt.Errorf("claude envelope: the rebuilt session does not end with the tool results of its last response")
	}
	expect := slices.ContainsFunc(p.BoundaryTools, func(n string) bool { return !promptlessTools[n] })
	if !expect {
		last := gjson.ParseBytes(p.Messages[len(p.Messages)-1])
		expect = slices.ContainsFunc(last.Get("content").Array(), func(b gjson.Result) bool { return b.Get("is_error").Bool() })
	}
	return &Claude{tracker: tracker{opts: opts}, prefix: p.Messages, boundary: p.BoundaryIDs, expectMarker: expect}, nil
}

// Check validates one request and returns the body to forward.
func (c *Claude) Check(ctx context.Context, req *bridge.Request) ([]byte, error) {
	c.checked()
	if req.Route != bridge.RouteMessages && req.Route != bridge.RouteCountTokens {
		return nil, bridge.Refuse("claude talks to /v1/messages only; this request went to the %s route", req.Route)
	}
	fwd, s, err := stripClaude(req.Body, c.prefix, c.boundary, c.opts.Nonce, c.expectMarker, c.opts.Prompt)
	if err != nil {
		return nil, err
	}
	if req.Route == bridge.RouteCountTokens {
		return fwd, nil // counts no turn and is not a model response
	}
	live := 0
	for _, m := range s.Live {
		if gjson.GetBytes(m, "role").Str == "assistant" {
			live++
		}
	}
	if err := c.overBudget(ctx, live); err != nil {
		return nil, err
	}
	c.accepted(live, len(s.Live) == 0, c.opts.Prompt != "", s.Runtime, s.Context)
	return fwd, nil
}

// ClaudeSplit is one request's messages cut at the envelope.
type ClaudeSplit struct {
	Runtime int           // runtime items in the history: role "system" messages, the context reminder
	Nonce   int           // index of the nonce message
	Context []ContextItem // role "system" messages between the nonce and the first live answer
	Live    []json.RawMessage
}

// StripClaude checks body against the rebuilt session's projection (ending
// with the results of boundary) and returns the body to forward. An error is
// a *bridge.Refusal.
func StripClaude(body []byte, prefix []json.RawMessage, boundary []string, nonce, prompt string) ([]byte, *ClaudeSplit, error) {
	return stripClaude(body, prefix, boundary, nonce, true, prompt)
}

func stripClaude(body []byte, prefix []json.RawMessage, boundary []string, nonce string, expectMarker bool, prompt string) ([]byte, *ClaudeSplit, error) {
	if !gjson.ValidBytes(body) {
		return nil, nil, bridge.Refuse("the request body is not valid JSON")
	}
	msgs := gjson.GetBytes(body, "messages")
	if !msgs.IsArray() {
		return nil, nil, bridge.Refuse("the request has no messages array; claude sends the whole conversation as messages")
	}
	items := msgs.Array()
	k := -1
	for i, m := range items {
		if m.Get("role").Str == "user" && onlyText(m.Get("content")) == nonce {
			if k >= 0 {
				return nil, nil, bridge.Refuse("the resume nonce appears as messages %d and %d; it must be there once", k, i)
			}
			k = i
		}
	}
	marker := ClaudeMarker(nonce)
	switch n := strings.Count(string(body), nonce); {
	case k < 0 && n == 0:
		return nil, nil, bridge.Refuse("the request carries no resume nonce: it is not the resumed conversation this bridge serves")
	case k < 0:
		return nil, nil, bridge.Refuse("the resume nonce appears in the request, but not as its own user message")
	case n != 1:
		return nil, nil, bridge.Refuse("the resume nonce appears %d times in the request; only its user message may hold it", n)
	case k < 2:
		return nil, nil, bridge.Refuse("the resume nonce is message %d; the resumed history must come before it", k)
	}
	if a := items[k-1]; a.Get("role").Str != "assistant" || onlyText(a.Get("content")) != noResponse {
		return nil, nil, bridge.Refuse("message %d before the resume nonce is not the %q answer claude writes when it resumes an interrupted turn (%s)", k-1, noResponse, describeMsg(a))
	}
	res := items[k-2]
	if res.Get("role").Str != "user" || !res.Get("content").IsArray() {
		return nil, nil, bridge.Refuse("message %d before the resume envelope is not the boundary tool results (%s)", k-2, describeMsg(res))
	}
	blocks := res.Get("content").Array()
	hasMarker := len(blocks) > 0 && blocks[len(blocks)-1].Get("type").Str == "text" && blocks[len(blocks)-1].Get("text").Str == marker
	switch n := strings.Count(string(body), marker); {
	case hasMarker && n != 1:
		return nil, nil, bridge.Refuse("the resume marker appears %d times in the request; only the boundary results may end with it", n)
	case !hasMarker && n > 0:
		return nil, nil, bridge.Refuse("the resume marker appears in the request, but not as the last block of the boundary results (message %d)", k-2)
	case !hasMarker && expectMarker:
		return nil, nil, bridge.Refuse("the boundary results (message %d) do not end with the resume marker claude adds to an interrupted turn; was CLAUDE_CODE_RESUME_PROMPT overridden?", k-2)
	}
	if hasMarker {
		blocks = blocks[:len(blocks)-1]
	}
	var ids []string
	for _, b := range blocks {
		if b.Get("type").Str != "tool_result" {
			return nil, nil, bridge.Refuse("the boundary message %d holds a %s block; only tool results may precede the resume marker", k-2, b.Get("type").Str)
		}
		ids = append(ids, b.Get("tool_use_id").Str)
	}
	if !slices.Equal(ids, boundary) {
		return nil, nil, bridge.Refuse("the boundary message %d answers tool_use ids %v; the rebuilt session ends with the results of %v", k-2, ids, boundary)
	}

	s := &ClaudeSplit{Nonce: k}
	j := 0
	for i := 0; i <= k-2; i++ {
		m := items[i]
		if m.Get("role").Str == "system" {
			s.Runtime++
			continue
		}
		raw := m.Raw
		switch {
		case i == k-2:
			raw = withContent(m, joinBlocks(blocks))
		case j == 0:
			if c := m.Get("content").Array(); m.Get("role").Str == "user" && len(c) > 1 && claude.IsContextReminder(c[0].Get("text").Str) {
				raw = withContent(m, joinBlocks(c[1:]))
				s.Runtime++
			}
		}
		if j >= len(prefix) {
			return nil, nil, bridge.Refuse("the request holds more messages before the resume envelope than the rebuilt session's %d: message %d (%s) is not part of it", len(prefix), i, describeMsg(m))
		}
		got, err := claude.Canonical([]byte(raw))
		if err != nil || string(got) != string(prefix[j]) {
			return nil, nil, bridge.Refuse("message %d (%s) differs from message %d of the rebuilt session (%s)", i, describeMsg(m), j, describeMsg(gjson.ParseBytes(prefix[j])))
		}
		j++
	}
	if j != len(prefix) {
		return nil, nil, bridge.Refuse("the request holds %d messages before the resume envelope; the rebuilt session has %d: the history does not match the boundary", j, len(prefix))
	}
	inContext := true
	for _, m := range items[k+1:] {
		if inContext && m.Get("role").Str == "system" {
			text := onlyText(m.Get("content"))
			s.Context = append(s.Context, ContextItem{Role: "system", Tag: firstLine(text), Length: len(text), SHA256: digest(text)})
		} else {
			inContext = false
		}
		s.Live = append(s.Live, json.RawMessage(m.Raw))
	}

	// The boundary message as the model gets it: the results, the prompt
	// where the marker was, and on the first request the nonce's cache
	// breakpoint back on its last block.
	out := make([]string, 0, len(blocks)+1)
	for _, b := range blocks {
		out = append(out, b.Raw)
	}
	if prompt != "" {
		out = append(out, `{"type":"text","text":`+jsonString(prompt)+`}`)
	}
	if cc := items[k].Get("content.0.cache_control"); k == len(items)-1 && cc.Exists() {
		last := out[len(out)-1]
		if !gjson.Get(last, "cache_control").Exists() {
			out[len(out)-1] = last[:len(last)-1] + `,"cache_control":` + cc.Raw + "}"
		}
	}
	kept := make([]string, 0, len(items)-2)
	for i, m := range items {
		switch {
		case i == k-2:
			kept = append(kept, withContent(m, "["+strings.Join(out, ",")+"]"))
		case i != k-1 && i != k:
			kept = append(kept, m.Raw)
		}
	}
	fwd, err := splice(body, msgs, "["+strings.Join(kept, ",")+"]")
	if err != nil {
		return nil, nil, err
	}
	return fwd, s, nil
}

// onlyText returns the text of content that is a string or exactly one text
// block, and "\x00" for anything else (no text equals it).
func onlyText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	a := c.Array()
	if c.IsArray() && len(a) == 1 && a[0].Get("type").Str == "text" {
		return a[0].Get("text").Str
	}
	return "\x00"
}

// withContent returns message m with its content replaced by the JSON array
// content, every other byte as sent.
func withContent(m gjson.Result, content string) string {
	c := gjson.Get(m.Raw, "content")
	if c.Index <= 0 {
		return m.Raw
	}
	return m.Raw[:c.Index] + content + m.Raw[c.Index+len(c.Raw):]
}

func joinBlocks(bs []gjson.Result) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = b.Raw
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// describeMsg names a message for a refusal without quoting its content.
func describeMsg(m gjson.Result) string {
	var b strings.Builder
	b.WriteString("role " + trim(m.Get("role").Str))
	c := m.Get("content")
	if c.Type == gjson.String {
		b.WriteString(", text")
		return b.String()
	}
	var kinds []string
	c.ForEach(func(_, blk gjson.Result) bool {
		k := blk.Get("type").Str
		if id := blk.Get("id").Str + blk.Get("tool_use_id").Str; id != "" {
			k += " " + trim(id)
		}
		kinds = append(kinds, k)
		return len(kinds) < 8
	})
	b.WriteString(", blocks [" + strings.Join(kinds, ", ") + "]")
	return b.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}
