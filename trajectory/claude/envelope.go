package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
)

// Envelope is the envelope of `claude --resume <id> --print` with the nonce on
// stdin. A print-mode resume of a session that ends at a tool result cannot
// start without a prompt; Claude Code then closes the interrupted turn
// itself. Releases differ in what they add and where, so the envelope is
// found by its parts, each optional except the nonce:
//
//	M[0 … b-1]   the stored history; role "system" messages (rendered from
//	             attachments) anywhere, and runtime <system-reminder> blocks
//	             at the front of the first user message (2.1.197's user
//	             context), are runtime items
//	M[b]         the boundary tool results, ending with the resume prompt
//	             when the release adds one (2.1.197: the per-run ResumeMarker
//	             set in CLAUDE_CODE_RESUME_PROMPT, or Claude Code's default
//	             text; 2.1.332 adds none)
//	M[b+1]       assistant "No response requested." (written by the CLI)
//	M[k]         user: the nonce, after the runtime reminders the release
//	             renders into the newest prompt (2.1.332: git status, commit
//	             attribution); a plain string once it is not the last message
//	M[k+1 …]     role "system" launch context (2.1.332: environment, model,
//	             date), then what the model and the tools added since
//
// The check requires the history equal to the rebuilt session's projection
// message for message (Canonical form), the boundary results to be
// exactly those of the rebuilt session, and the nonce and the marker once
// each in the whole body. The forwarded request is the one Claude Code sends
// in a session it never left: the resume prompt, the synthetic answer and the
// nonce removed; reminders that rode on the nonce moved to the front of the
// first user message and the launch context right after it, where a fresh
// session has them; the boundary prompt (when one was asked for) where the
// resume prompt was; and, when the envelope held the request's last cache
// breakpoint, that breakpoint on the last boundary block.
type Envelope struct {
	*envelope.Tracker
	prefix   []json.RawMessage
	boundary []string
}

// noResponse is the assistant text Claude Code writes to close an
// interrupted turn before a new prompt.
const noResponse = "No response requested."

// defaultResumePrompt is the resume prompt Claude Code uses when
// CLAUDE_CODE_RESUME_PROMPT is not honoured.
const defaultResumePrompt = "Continue from where you left off."

// ResumeMarker is the resume prompt a run sets in CLAUDE_CODE_RESUME_PROMPT:
// derived from the nonce, so it is as unique as the nonce and needs no state
// of its own.
func ResumeMarker(nonce string) string {
	return "__PVISOR_RESUME_MARKER_" + strings.TrimSuffix(strings.TrimPrefix(nonce, envelope.NoncePrefix), envelope.NonceSuffix) + "__"
}

// NewEnvelope returns the envelope for a session whose projection up to the
// boundary is p; p must end with the boundary tool results.
func NewEnvelope(p *Projection, opts envelope.Options) (*Envelope, error) {
	if !envelope.ValidNonce(opts.Nonce) {
		return nil, fmt.Errorf("claude envelope: nonce %q does not have the shape NewNonce returns", opts.Nonce)
	}
	if len(p.Messages) < 2 || len(p.BoundaryIDs) == 0 {
		return nil, fmt.Errorf("claude envelope: the rebuilt session does not end with the tool results of its last response")
	}
	return &Envelope{Tracker: envelope.NewTracker(opts), prefix: p.Messages, boundary: p.BoundaryIDs}, nil
}

// Check validates one request and returns the body to forward.
func (c *Envelope) Check(ctx context.Context, req *bridge.Request) ([]byte, error) {
	c.Checked()
	if req.Route != bridge.RouteMessages && req.Route != bridge.RouteCountTokens {
		return nil, bridge.Refuse("claude talks to /v1/messages only; this request went to the %s route", req.Route)
	}
	opts := c.Options()
	fwd, s, err := StripEnvelope(req.Body, c.prefix, c.boundary, opts.Nonce, opts.Prompt)
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
	if err := c.OverBudget(ctx, live); err != nil {
		return nil, err
	}
	c.Accepted(s.Variant(), live, len(s.Live) == 0, opts.Prompt != "", s.Runtime, s.Context)
	return fwd, nil
}

// EnvelopeSplit is one request's messages cut at the envelope.
type EnvelopeSplit struct {
	Runtime      int                    // runtime items in the history: role "system" messages, reminder blocks
	Boundary     int                    // index of the boundary results message
	Nonce        int                    // index of the nonce message
	ResumePrompt string                 // "marker", "default" or "" (none)
	NoResponse   bool                   // the synthetic "No response requested." was there
	Reminders    int                    // runtime reminder blocks before the nonce, moved to the first user message
	DateChange   bool                   // the notice that today is another day than the session's last (a runtime item)
	Context      []envelope.ContextItem // role "system" messages between the nonce and the first live answer
	Live         []json.RawMessage
}

// Variant names the envelope parts the request had, in request order.
func (s *EnvelopeSplit) Variant() string {
	var parts []string
	if s.ResumePrompt != "" {
		parts = append(parts, "resume-prompt-"+s.ResumePrompt)
	}
	if s.NoResponse {
		parts = append(parts, "no-response")
	}
	if s.Reminders > 0 {
		parts = append(parts, "reminders")
	}
	parts = append(parts, "nonce")
	if s.DateChange {
		parts = append(parts, "date-change")
	}
	if len(s.Context) > 0 {
		parts = append(parts, "context")
	}
	return strings.Join(parts, "+")
}

// StripEnvelope checks body against the rebuilt session's projection (ending
// with the results of boundary) and returns the body to forward. An error is
// a *bridge.Refusal.
func StripEnvelope(body []byte, prefix []json.RawMessage, boundary []string, nonce, prompt string) ([]byte, *EnvelopeSplit, error) {
	if !gjson.ValidBytes(body) {
		return nil, nil, bridge.Refuse("the request body is not valid JSON")
	}
	msgs := gjson.GetBytes(body, "messages")
	if !msgs.IsArray() {
		return nil, nil, bridge.Refuse("the request has no messages array; claude sends the whole conversation as messages")
	}
	items := msgs.Array()
	s := &EnvelopeSplit{Nonce: -1}
	var reminders []gjson.Result
	for i, m := range items {
		if r, ok := nonceMessage(m, nonce); ok {
			if s.Nonce >= 0 {
				return nil, nil, bridge.Refuse("the resume nonce appears as messages %d and %d; it must be there once", s.Nonce, i)
			}
			s.Nonce, reminders = i, r
		}
	}
	k := s.Nonce
	switch n := strings.Count(string(body), nonce); {
	case k < 0 && n == 0:
		return nil, nil, bridge.Refuse("the request carries no resume nonce: it is not the resumed conversation this bridge serves")
	case k < 0:
		return nil, nil, bridge.Refuse("the resume nonce appears in the request, but not as the last block of its own user message")
	case n != 1:
		return nil, nil, bridge.Refuse("the resume nonce appears %d times in the request; only its user message may hold it", n)
	}
	s.Reminders = len(reminders)
	b := k - 1
	if b >= 0 && items[b].Get("role").Str == "assistant" && onlyText(items[b].Get("content")) == noResponse {
		s.NoResponse = true
		b--
	}
	if b < 1 {
		return nil, nil, bridge.Refuse("the resume nonce is message %d; the resumed history must come before it", k)
	}
	s.Boundary = b
	res := items[b]
	if res.Get("role").Str != "user" || !res.Get("content").IsArray() {
		return nil, nil, bridge.Refuse("message %d before the resume envelope is not the boundary tool results (%s)", b, describeMsg(res))
	}
	blocks := res.Get("content").Array()
	marker := ResumeMarker(nonce)
	if n := len(blocks); n > 0 && blocks[n-1].Get("type").Str == "text" {
		switch blocks[n-1].Get("text").Str {
		case marker:
			s.ResumePrompt, blocks = "marker", blocks[:n-1]
		case defaultResumePrompt:
			s.ResumePrompt, blocks = "default", blocks[:n-1]
		}
	}
	switch n := strings.Count(string(body), marker); {
	case s.ResumePrompt == "marker" && n != 1:
		return nil, nil, bridge.Refuse("the resume marker appears %d times in the request; only the boundary results may end with it", n)
	case s.ResumePrompt != "marker" && n > 0:
		return nil, nil, bridge.Refuse("the resume marker appears in the request, but not as the last block of the boundary results (message %d)", b)
	}
	var ids []string
	for _, blk := range blocks {
		if blk.Get("type").Str != "tool_result" {
			return nil, nil, bridge.Refuse("the boundary message %d holds a %s block; only tool results (and the resume prompt) may end the resumed history", b, blk.Get("type").Str)
		}
		ids = append(ids, blk.Get("tool_use_id").Str)
	}
	if !slices.Equal(ids, boundary) {
		return nil, nil, bridge.Refuse("the boundary message %d answers tool_use ids %v; the rebuilt session ends with the results of %v", b, ids, boundary)
	}

	first := -1 // the first user message, where a fresh session's reminders are
	j := 0
	for i := 0; i <= b; i++ {
		m := items[i]
		if m.Get("role").Str == "system" {
			s.Runtime++
			continue
		}
		raw := m.Raw
		switch {
		case i == b:
			raw = withContent(m, joinBlocks(blocks))
		case j == 0:
			first = i
			if c := m.Get("content").Array(); m.Get("role").Str == "user" {
				n := leadingReminders(c)
				if n > 0 && n < len(c) {
					raw = withContent(m, joinBlocks(c[n:]))
					s.Runtime += n
				}
			}
		}
		if j >= len(prefix) {
			return nil, nil, bridge.Refuse("the request holds more messages before the resume envelope than the rebuilt session's %d: message %d (%s) is not part of it", len(prefix), i, describeMsg(m))
		}
		got, err := Canonical([]byte(raw))
		if err != nil || string(got) != string(prefix[j]) {
			return nil, nil, bridge.Refuse("message %d (%s) differs from message %d of the rebuilt session (%s)", i, describeMsg(m), j, describeMsg(gjson.ParseBytes(prefix[j])))
		}
		j++
	}
	if j != len(prefix) {
		return nil, nil, bridge.Refuse("the request holds %d messages before the resume envelope; the rebuilt session has %d: the history does not match the boundary", j, len(prefix))
	}
	// Role "system" messages right after the nonce: per-turn reminders
	// (the token count, which a session that never left sends after its
	// newest message too) stay where they are as runtime items; the launch
	// context moves next to the first user message when the release put its
	// reminders on the nonce (2.1.332, where a fresh session has it there),
	// and otherwise stays after the boundary as inserted context.
	moved := map[int]bool{}
	ctxEnd := k + 1
	for ; ctxEnd < len(items) && items[ctxEnd].Get("role").Str == "system"; ctxEnd++ {
		text := onlyText(items[ctxEnd].Get("content"))
		if isTurnReminder(text) {
			s.Runtime++
			continue
		}
		if isDateChange(text) {
			// A session resumed on a later day than it last ran is told so
			// (2.1.3xx): the time between the recording and the replay,
			// which no rebuilt session can undo; kept where it is, counted
			// as a runtime item and named in the variant.
			s.Runtime++
			s.DateChange = true
			continue
		}
		place := envelope.PlacedAfterBoundary
		if s.Reminders > 0 {
			place, moved[ctxEnd] = envelope.PlacedAfterFirstMessage, true
		}
		s.Context = append(s.Context, envelope.ContextItem{Role: "system", Tag: firstLine(text), Length: len(text), SHA256: envelope.Digest(text), Placement: place})
	}
	for _, m := range items[k+1:] {
		s.Live = append(s.Live, json.RawMessage(m.Raw))
	}
	fwd, err := envelope.Splice(body, msgs, "["+strings.Join(s.forward(items, blocks, reminders, first, ctxEnd, moved, prompt), ",")+"]")
	if err != nil {
		return nil, nil, err
	}
	return fwd, s, nil
}

// forward builds the messages sent upstream (see Envelope).
func (s *EnvelopeSplit) forward(items, blocks, reminders []gjson.Result, first, ctxEnd int, moved map[int]bool, prompt string) []string {
	k, b := s.Nonce, s.Boundary
	// The request's last cache breakpoint, when the nonce or moved launch
	// context holds it (the first request and its retries): a session that
	// never left puts it on the last block of its last message, which is
	// then the boundary. A per-turn reminder that stays last keeps its own.
	var cc string
	if last := len(items) - 1; last == k || moved[last] {
		c := items[last].Get("content")
		if a := c.Array(); c.IsArray() && len(a) > 0 {
			cc = a[len(a)-1].Get("cache_control").Raw
		}
	}
	out := make([]string, 0, len(blocks)+1)
	for _, blk := range blocks {
		out = append(out, blk.Raw)
	}
	if prompt != "" {
		out = append(out, `{"type":"text","text":`+envelope.JSONString(prompt)+`}`)
	}
	if cc != "" && !gjson.Get(out[len(out)-1], "cache_control").Exists() {
		last := out[len(out)-1]
		out[len(out)-1] = last[:len(last)-1] + `,"cache_control":` + cc + "}"
	}
	kept := make([]string, 0, len(items))
	for i, m := range items {
		switch {
		case i == b:
			kept = append(kept, withContent(m, "["+strings.Join(out, ",")+"]"))
		case i > b && i <= k:
			// the resume prompt's answer and the nonce
		case moved[i]:
			// next to the first user message, below
		case i == first && len(reminders) > 0:
			kept = append(kept, withReminders(m, reminders))
			for j := k + 1; j < ctxEnd; j++ {
				if moved[j] {
					kept = append(kept, asContext(items[j]))
				}
			}
		default:
			kept = append(kept, m.Raw)
		}
	}
	return kept
}

// nonceMessage reports whether m is the user message that carries the
// nonce: its whole content, or its last text block after nothing but runtime
// reminders (returned).
func nonceMessage(m gjson.Result, nonce string) ([]gjson.Result, bool) {
	if m.Get("role").Str != "user" {
		return nil, false
	}
	c := m.Get("content")
	if c.Type == gjson.String {
		return nil, c.Str == nonce
	}
	a := c.Array()
	if !c.IsArray() || len(a) == 0 {
		return nil, false
	}
	last := a[len(a)-1]
	if last.Get("type").Str != "text" || last.Get("text").Str != nonce || leadingReminders(a) != len(a)-1 {
		return nil, false
	}
	return a[:len(a)-1], true
}

// leadingReminders counts the runtime reminder text blocks at the front of c.
func leadingReminders(c []gjson.Result) int {
	n := 0
	for n < len(c) && c[n].Get("type").Str == "text" && IsRuntimeReminder(c[n].Get("text").Str) {
		n++
	}
	return n
}

// withReminders returns the user message m with the reminder blocks in
// front of its content (a string content becomes one text block), as Claude
// Code sends its first message. A cache breakpoint on a reminder stays where
// the CLI put it only while that message was last, so it is dropped.
func withReminders(m gjson.Result, reminders []gjson.Result) string {
	parts := make([]string, 0, len(reminders)+1)
	for _, r := range reminders {
		parts = append(parts, withoutKey(r.Raw, "cache_control"))
	}
	c := m.Get("content")
	if c.Type == gjson.String {
		parts = append(parts, `{"type":"text","text":`+c.Raw+`}`)
	} else {
		for _, b := range c.Array() {
			parts = append(parts, b.Raw)
		}
	}
	return withContent(m, "["+strings.Join(parts, ",")+"]")
}

// asContext returns a launch-context system message in the form Claude Code
// sends it when it is not the last message: one text block becomes a plain
// string, without a cache breakpoint.
func asContext(m gjson.Result) string {
	c := m.Get("content")
	a := c.Array()
	if !c.IsArray() {
		return m.Raw
	}
	if len(a) == 1 && a[0].Get("type").Str == "text" {
		return withContent(m, envelope.JSONString(a[0].Get("text").Str))
	}
	parts := make([]string, len(a))
	for i, b := range a {
		parts[i] = withoutKey(b.Raw, "cache_control")
	}
	return withContent(m, "["+strings.Join(parts, ",")+"]")
}

// isTurnReminder reports whether a system message's text is the per-turn
// token-count reminder Claude Code adds after the newest message.
// dateChange is Claude Code's notice of a new day: "The date has changed.
// Today's date is now 2026-12-02. DO NOT mention this …".
var dateChange = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^The date has changed\. Today's date is now \d{4}-\d{2}-\d{2}\.[^\n]*\n?$`)
})

func isDateChange(text string) bool { return dateChange().MatchString(text) }

func isTurnReminder(text string) bool {
	return strings.HasPrefix(text, "<total_tokens>") && strings.HasSuffix(strings.TrimRight(text, "\n"), "</total_tokens>") &&
		!strings.Contains(text, "\n\n")
}

// withoutKey returns the JSON object obj without its top-level key (a plain
// name), every other byte as it was.
func withoutKey(obj, key string) string {
	v := gjson.Get(obj, key)
	if !v.Exists() || v.Index <= 0 {
		return obj
	}
	i := v.Index - 1
	for i > 0 && isJSONSpace(obj[i]) {
		i--
	}
	if obj[i] != ':' {
		return obj
	}
	i--
	for i > 0 && isJSONSpace(obj[i]) {
		i--
	}
	start := strings.LastIndex(obj[:i], `"`+key) // the key's opening quote
	if start < 0 || obj[i] != '"' {
		return obj
	}
	end := v.Index + len(v.Raw)
	j := start - 1
	for j > 0 && isJSONSpace(obj[j]) {
		j--
	}
	if obj[j] == ',' {
		return obj[:j] + obj[end:]
	}
	for end < len(obj) && isJSONSpace(obj[end]) {
		end++
	}
	if end < len(obj) && obj[end] == ',' {
		end++
	}
	return obj[:start] + obj[end:]
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

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
	b.WriteString("role " + envelope.Clip(m.Get("role").Str))
	c := m.Get("content")
	if c.Type == gjson.String {
		b.WriteString(", text")
		return b.String()
	}
	var kinds []string
	c.ForEach(func(_, blk gjson.Result) bool {
		k := blk.Get("type").Str
		if id := blk.Get("id").Str + blk.Get("tool_use_id").Str; id != "" {
			k += " " + envelope.Clip(id)
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
