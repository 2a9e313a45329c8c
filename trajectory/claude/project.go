package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// Projection is what the model sees of a Claude Code session: the Anthropic
// Messages `messages` the CLI (2.1.x, checked with 2.1.197) sends when it
// resumes the session, in canonical form (see Canonical). Claude Code builds
// them from the parentUuid chain of the newest leaf: the fragments of one
// model response (entries sharing message.id, with the parallel branches a
// plain walk misses re-attached) become one assistant message, the
// tool_result entries of that response one user message, and consecutive
// user messages are merged. Attachments and system entries are not stored
// messages: the CLI renders them afresh at every launch (as role "system"
// messages or reminders), so they are runtime items, not part of the
// projection. Assistant entries that record API errors are never sent.
type Projection struct {
	// Messages are canonical request messages, oldest first.
	Messages []json.RawMessage
	// SessionID is the sessionId of the leaf entry.
	SessionID string
	// BoundaryIDs are the tool_use ids of the last assistant message when
	// the projection ends with their tool results (a session rebuilt up to
	// a step), in the order of the results; nil otherwise.
	BoundaryIDs []string
	// BoundaryTools are the names of those tools.
	BoundaryTools []string
}

// projEntry is one main-thread entry as the projection needs it.
type projEntry struct {
	uuid, parent string
	kind         uint8
	msgID        string
	apiError     bool
	results      bool // a user entry holding tool_result blocks
	content      gjson.Result
	session      string
	onChain      bool
	used         bool
}

// Project reads a Claude Code session and returns its projection.
func Project(r io.Reader) (*Projection, error) {
	var entries []*projEntry
	byUUID := map[string]int{}
	leaf := -1
	jr := jsonl.NewReader(r)
	for jr.Next() {
		l := jr.Line()
		v := gjson.ParseBytes(bytes.Clone(l.Data))
		if v.Get("isSidechain").Type == gjson.True {
			continue
		}
		uuid := v.Get("uuid")
		if uuid.Type != gjson.String || uuid.Str == "" {
			continue // metadata: queue operations, last-prompt, summaries, …
		}
		if _, dup := byUUID[uuid.Str]; dup {
			return nil, trajectory.Errorf(l.N, "duplicate uuid %s", uuid.Str)
		}
		e := &projEntry{uuid: uuid.Str, parent: v.Get("parentUuid").Str, session: v.Get("sessionId").Str}
		if v.Get("type").Str == "system" && v.Get("subtype").Str == "compact_boundary" {
			return nil, trajectory.Unsupportedf(l.N, "the session was compacted here: Claude Code sends a summary instead of the earlier history, which a continuation cannot check against the rebuilt session")
		}
		msg := v.Get("message")
		switch v.Get("type").Str {
		case "user":
			e.kind = kindUser
			e.content = msg.Get("content")
			e.results = e.content.IsArray() && slices.ContainsFunc(e.content.Array(), func(b gjson.Result) bool {
				return b.Get("type").Str == "tool_result"
			})
		case "assistant":
			e.kind = kindAssistant
			e.msgID = msg.Get("id").Str
			e.apiError = v.Get("isApiErrorMessage").Type == gjson.True
			e.content = msg.Get("content")
		}
		byUUID[e.uuid] = len(entries)
		if e.kind != kindOther {
			leaf = len(entries)
		}
		entries = append(entries, e)
	}
	if err := jr.Err(); err != nil {
		return nil, err
	}
	if leaf < 0 {
		return nil, &trajectory.Error{Kind: trajectory.Malformed, Msg: "no main-thread user or assistant entry: not a Claude Code session"}
	}
	var chain []*projEntry
	for cur := leaf; ; {
		e := entries[cur]
		if e.onChain {
			return nil, &trajectory.Error{Kind: trajectory.Malformed, Msg: fmt.Sprintf("parentUuid chain loops back to uuid %s", e.uuid)}
		}
		e.onChain = true
		chain = append(chain, e)
		if e.parent == "" {
			break
		}
		p, ok := byUUID[e.parent]
		if !ok {
			return nil, &trajectory.Error{Kind: trajectory.Malformed, Msg: fmt.Sprintf("parentUuid %s is not an entry of this file: the conversation chain is broken", e.parent)}
		}
		cur = p
	}
	slices.Reverse(chain)
	p := &Projection{SessionID: entries[leaf].session}
	if err := p.build(chain, entries, byUUID); err != nil {
		return nil, err
	}
	return p, nil
}

// turn is one message being assembled: a model response with its results, or
// a user message.
type turn struct {
	role    string
	frags   []int // entry indexes (assistant) or the user entry
	results []int
}

func (p *Projection) build(chain, entries []*projEntry, byUUID map[string]int) error {
	idx := func(e *projEntry) int { return byUUID[e.uuid] }
	var turns []*turn
	byMsg := map[string]*turn{}
	var open *turn
	for _, e := range chain {
		switch {
		case e.kind == kindAssistant && e.apiError:
			open = nil
		case e.kind == kindAssistant:
			e.used = true
			if open != nil && e.msgID != "" && entries[open.frags[0]].msgID == e.msgID {
				open.frags = append(open.frags, idx(e))
				continue
			}
			open = &turn{role: "assistant", frags: []int{idx(e)}}
			if e.msgID != "" {
				byMsg[e.msgID] = open
			}
			turns = append(turns, open)
		case e.kind == kindUser && e.results && open != nil:
			open.results = append(open.results, idx(e))
		case e.kind == kindUser:
			open = nil
			turns = append(turns, &turn{role: "user", frags: []int{idx(e)}})
		}
	}
	// Parallel calls form a small tree since 2.1: each tool_result hangs off
	// the entry of its own tool_use. Claude Code re-attaches the other
	// fragments of a response on the chain and the results hanging off them.
	for i, e := range entries {
		if e.onChain || e.used {
			continue
		}
		switch {
		case e.kind == kindAssistant && !e.apiError && e.msgID != "":
			if t := byMsg[e.msgID]; t != nil {
				t.frags = append(t.frags, i)
				e.used = true
			}
		case e.kind == kindUser && e.results:
			if pi, ok := byUUID[e.parent]; ok && entries[pi].kind == kindAssistant {
				if t := byMsg[entries[pi].msgID]; t != nil && entries[pi].msgID != "" {
					t.results = append(t.results, i)
				}
			}
		}
	}
	var msgs []message
	for _, t := range turns {
		slices.Sort(t.frags)
		slices.Sort(t.results)
		m := message{role: t.role}
		for _, i := range t.frags {
			m.add(entries[i].content)
		}
		msgs = appendMerged(msgs, m)
		if len(t.results) > 0 {
			r := message{role: "user"}
			for _, i := range t.results {
				r.add(entries[i].content)
			}
			msgs = appendMerged(msgs, r)
		}
	}
	for _, m := range msgs {
		raw, err := m.canonical()
		if err != nil {
			return err
		}
		p.Messages = append(p.Messages, raw)
	}
	p.boundary(msgs)
	return nil
}

// message is a request message being assembled from stored content.
type message struct {
	role   string
	blocks []any
}

// add appends stored content: a string is one text block.
func (m *message) add(c gjson.Result) {
	if c.Type == gjson.String {
		m.blocks = append(m.blocks, map[string]any{"type": "text", "text": c.Str})
		return
	}
	for _, b := range c.Array() {
		m.blocks = append(m.blocks, decodeValue(b.Raw))
	}
}

// appendMerged appends m, merging it into the previous message when both are
// user messages: the CLI sends consecutive user messages as one.
func appendMerged(msgs []message, m message) []message {
	if len(m.blocks) == 0 {
		return msgs
	}
	if n := len(msgs); n > 0 && m.role == "user" && msgs[n-1].role == "user" {
		msgs[n-1].blocks = append(msgs[n-1].blocks, m.blocks...)
		return msgs
	}
	return append(msgs, m)
}

func (m message) canonical() (json.RawMessage, error) {
	return encodeCanonical(map[string]any{"role": m.role, "content": m.blocks})
}

// boundary records the tool_use ids of the last assistant message when the
// last message answers exactly those calls.
func (p *Projection) boundary(msgs []message) {
	n := len(msgs)
	if n < 2 || msgs[n-1].role != "user" || msgs[n-2].role != "assistant" {
		return
	}
	var ids, names, got []string
	for _, b := range msgs[n-2].blocks {
		if bm, _ := b.(map[string]any); bm["type"] == "tool_use" {
			id, _ := bm["id"].(string)
			name, _ := bm["name"].(string)
			ids, names = append(ids, id), append(names, name)
		}
	}
	for _, b := range msgs[n-1].blocks {
		bm, _ := b.(map[string]any)
		if bm["type"] != "tool_result" {
			return
		}
		id, _ := bm["tool_use_id"].(string)
		got = append(got, id)
	}
	// The results answer exactly the calls, in the order the CLI stored
	// them: 2.1.197 wrote parallel results in tool_use order, 2.1.332 writes
	// them as they complete, and the request keeps the stored order.
	if len(ids) == 0 || len(got) != len(ids) {
		return
	}
	byID := map[string]string{}
	for i, id := range ids {
		byID[id] = names[i]
	}
	seen := map[string]bool{}
	var gotNames []string
	for _, id := range got {
		name, ok := byID[id]
		if !ok || seen[id] {
			return
		}
		seen[id] = true
		gotNames = append(gotNames, name)
	}
	p.BoundaryIDs, p.BoundaryTools = got, gotNames
}

// Canonical returns a request message in the form projections use: content as
// a block array (a string is one text block), no cache_control anywhere (the
// CLI moves its cache breakpoints from request to request), keys sorted, no
// insignificant whitespace, numbers as written.
func Canonical(raw []byte) (json.RawMessage, error) {
	v := decodeValue(string(raw))
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a message is not a JSON object")
	}
	if s, ok := m["content"].(string); ok {
		m["content"] = []any{map[string]any{"type": "text", "text": s}}
	}
	return encodeCanonical(m)
}

// decodeValue parses JSON with numbers kept as written; invalid JSON gives nil.
func decodeValue(raw string) any {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return v
}

func encodeCanonical(v any) (json.RawMessage, error) {
	stripCacheControl(v)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// stripCacheControl removes cache breakpoints from the content blocks of a
// message and from the blocks nested in its tool results; tool inputs and
// other values keep every key.
func stripCacheControl(v any) {
	m, _ := v.(map[string]any)
	blocks, _ := m["content"].([]any)
	for _, b := range blocks {
		bm, _ := b.(map[string]any)
		delete(bm, "cache_control")
		inner, _ := bm["content"].([]any)
		for _, ib := range inner {
			if ibm, ok := ib.(map[string]any); ok {
				delete(ibm, "cache_control")
			}
		}
	}
}

// contextReminderPrefix starts the block Claude Code prepends to the first
// user message of every request: the user context (today's date, CLAUDE.md
// contents) it gathers afresh at each launch. It is never stored.
const contextReminderPrefix = "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"

// IsContextReminder reports whether text is that block.
func IsContextReminder(text string) bool {
	return strings.HasPrefix(text, contextReminderPrefix) && IsRuntimeReminder(text)
}

// IsRuntimeReminder reports whether text is one whole <system-reminder>
// block: what Claude Code renders from the context it gathers at each launch
// (user context, git status, commit attribution) into the user message of a
// request. Which reminders a release adds, and to which user message, moves
// between releases (2.1.197 prefixed the first message with the user
// context; 2.1.332 puts git status and attribution before the newest
// prompt), so envelopes recognise them by this shape.
func IsRuntimeReminder(text string) bool {
	return strings.HasPrefix(text, "<system-reminder>\n") &&
		strings.HasSuffix(strings.TrimRight(text, "\n"), "</system-reminder>")
}
