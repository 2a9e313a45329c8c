package claude

import (
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/internal/rawjson"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// The decoder makes one pass over the file and keeps, per main-thread entry,
// a fixed-size record plus the model-visible content of assistant entries
// (and of tool results unless SkipObservationContent). The active chain is
// only known once the last entry has been read, so dead branches cost their
// records and assistant content but never their raw bytes, their
// toolUseResult copies, or anything of sidechain and metadata lines.

const (
	kindOther uint8 = iota
	kindUser
	kindAssistant
)

const (
	flagLogical   uint8 = 1 << iota // parent taken from logicalParentUuid (compaction)
	flagResults                     // user entry carrying tool_result blocks
	flagSynthetic                   // assistant entry written by the CLI, not the model
	flagOnChain
	flagUsed // assistant fragment already assigned to an action
)

// entry is the compact record kept for every main-thread entry.
type entry struct {
	start, end int64
	line       int32
	parent     int32 // uuid id of the parent, -1 at a root
	msg        int32 // interned message.id, -1 when absent
	data       int32 // first index into blocks (assistant) or results (user)
	ndata      int32
	uuid       int32
	version    uint16 // interned, 0 = none
	session    uint16
	cwd        uint16
	kind       uint8
	flags      uint8
}

const (
	blockText uint8 = iota
	blockThinking
	blockToolUse
)

// block is what every pass keeps of a content block, 16 bytes: a large
// session has hundreds of thousands. What only a full decode keeps is in
// the blockBody of the same index.
type block struct {
	id   uint64 // tool_use: the id's hash (see decoder.hash)
	name uint32 // tool_use: index into decoder.toolNames
	kind uint8
}

type blockBody struct {
	text  string // text, thinking, or the tool_use id
	input []byte
}

// result is what every pass keeps of a tool_result; resultBody, of the
// same index, what only a full decode keeps.
type result struct {
	id      uint64 // the tool_use_id's hash
	isError bool
}

type resultBody struct {
	toolUseID string
	content   string
}

type decoder struct {
	opts    trajectory.Options
	ids     idTable
	entryOf []int32 // uuid id -> entry index, -1 when only referenced
	entries entryList
	blocks  []block
	bodies  []blockBody // of blocks, not kept by a lean pass
	results []result
	rbodies []resultBody // of results, not kept by a lean pass

	msgIDs   map[uint64]int32 // by hash
	msgNames []string         // not kept by a lean pass
	nmsg     int32

	// seed keys the hashes that stand for message and tool_use ids: a
	// lean pass keeps no id itself, and a full one pairs by them too. It
	// is random per decode, so a file cannot be made to collide (two ids
	// of a file share a 64-bit hash with odds of about n²/2⁶⁵).
	seed maphash.Seed

	versions strTable
	sessions strTable
	cwds     strTable

	leaf int32 // last main user/assistant entry

	// Sidechain entries are skipped; these describe them for the error
	// that refuses a subagent transcript.
	sideLines   int
	sideAgent   string
	sideSession string

	buf []byte // the current line, for ownership checks

	// lean (DecodePrefix) keeps no text or thinking blocks, tool input or
	// result content: which entries form the prefix is known only at the end, and
	// those are read again then (see prefix.go).
	lean      bool
	names     map[string]uint32 // tool names, interned
	toolNames []string

	scratch [2][]string // texts' buffers
}

func newDecoder(opts trajectory.Options) *decoder {
	d := &decoder{
		opts:   opts,
		ids:    newIDTable(),
		msgIDs: make(map[uint64]int32),
		seed:   maphash.MakeSeed(),
		leaf:   -1,
		names:  make(map[string]uint32),
	}
	d.versions.init()
	d.sessions.init()
	d.cwds.init()
	return d
}

// Decode reads a Claude Code session JSONL file.
func (f *Format) Decode(r io.Reader, opts trajectory.Options) (*trajectory.Trajectory, error) {
	return newDecoder(opts).decode(r, nil, 0)
}

func (d *decoder) decode(r io.Reader, src io.ReaderAt, limit int) (*trajectory.Trajectory, error) {
	d.lean = limit > 0
	jr := jsonl.NewReader(r)
	for jr.Next() {
		if err := d.line(jr.Line()); err != nil {
			return nil, err
		}
	}
	if err := jr.Err(); err != nil {
		return nil, err
	}
	t, err := d.build(src, limit)
	if err != nil {
		return nil, err
	}
	t.Lines = jr.Lines()
	t.TornTail = jr.Torn()
	return t, nil
}

// keep returns s detached from the line buffer: gjson hands back
// substrings of the (reused) line for unescaped values and fresh strings
// for escaped ones, and only the former need a copy.
func (d *decoder) keep(s string) string {
	if len(s) == 0 || len(d.buf) == 0 {
		return s
	}
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	base := uintptr(unsafe.Pointer(unsafe.SliceData(d.buf)))
	if p >= base && p < base+uintptr(len(d.buf)) {
		return strings.Clone(s)
	}
	return s
}

// The members scan, assistant and its blocks read; rawjson steps over the
// others without unescaping them.
var (
	topKeys     = []string{"type", "uuid", "parentUuid", "logicalParentUuid", "isSidechain", "sessionId", "version", "message", "isApiErrorMessage", "agentId", "cwd"}
	messageKeys = []string{"id", "model", "content"}
	blockKeys   = []string{"type", "text", "thinking", "id", "name", "input"}
	contentKey  = []string{"content"}
	resultKeys  = []string{"type", "tool_use_id", "is_error", "content"} // content last: optional
)

// fields are the top-level members of an entry the decoder reads.
type fields struct {
	typ, uuid, parent, logical, sess, ver, msg, agent, sideKey, cwd gjson.Result
	apiErr                                                          bool
}

// scan reads the top-level members of the line s.
func (d *decoder) scan(s string) (f fields) {
	rawjson.EachOf(gjson.Parse(s), topKeys, func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			f.typ = v
		case "uuid":
			f.uuid = v
		case "parentUuid":
			f.parent = v
		case "logicalParentUuid":
			f.logical = v
		case "isSidechain":
			f.sideKey = v
		case "sessionId":
			f.sess = v
		case "version":
			f.ver = v
		case "message":
			f.msg = v
		case "isApiErrorMessage":
			f.apiErr = v.Type == gjson.True
		case "agentId":
			f.agent = v
		case "cwd":
			f.cwd = v
		}
		// Stop as soon as the rest of the line cannot matter: a sidechain
		// entry is only counted, and a tool result's user entry ends with
		// toolUseResult, a second and often larger copy of the result.
		if f.sideKey.Type == gjson.True {
			return !(f.sess.Exists() && (f.agent.Exists() || d.sideLines > 0))
		}
		return !(f.typ.Str == "user" && f.uuid.Exists() && f.msg.Exists() && f.parent.Type == gjson.String &&
			f.sideKey.Exists() && f.sess.Exists() && f.ver.Exists())
	})
	return f
}

func (d *decoder) line(l jsonl.Line) error {
	d.buf = l.Data
	// The line is only read while it is current; anything kept goes
	// through keep, so aliasing the buffer avoids copying every line.
	s := unsafe.String(unsafe.SliceData(l.Data), len(l.Data))
	f := d.scan(s)
	typ, uuid, parent, logical, sess, ver, msg, agent, sideKey, cwd := f.typ, f.uuid, f.parent, f.logical, f.sess, f.ver, f.msg, f.agent, f.sideKey, f.cwd
	apiErr := f.apiErr
	side := sideKey.Type == gjson.True
	line := l.N
	kind := kindOther
	switch typ.Str {
	case "user":
		kind = kindUser
	case "assistant":
		kind = kindAssistant
	}
	if side {
		if d.sideLines == 0 {
			d.sideAgent = d.keep(agent.Str)
			d.sideSession = d.keep(sess.Str)
		}
		d.sideLines++
		return nil
	}
	if uuid.Type == gjson.Null {
		if kind != kindOther {
			return trajectory.Errorf(line, "%s entry has no uuid", typ.Str)
		}
		if codexRecordTypes[typ.Str] {
			return &trajectory.Error{Kind: trajectory.Malformed, Line: line,
				Msg:  fmt.Sprintf("a Codex rollout record (type %q), not a Claude Code entry: two sessions are concatenated", typ.Str),
				Hint: fmt.Sprintf("keep lines 1-%d (head -n %d) for the Claude Code session", line-1, line-1)}
		}
		return nil // metadata line (summary, file-history-snapshot, ...)
	}
	if uuid.Type != gjson.String || uuid.Str == "" {
		return trajectory.Errorf(line, "uuid is not a non-empty string")
	}
	e := entry{start: l.Offset, end: l.End, line: int32(line), parent: -1, msg: -1, kind: kind}
	e.uuid = d.ids.intern(uuid.Str)
	d.grow(e.uuid)
	if prev := d.entryOf[e.uuid]; prev >= 0 {
		return trajectory.Errorf(line, "duplicate uuid %s (first used at line %d)", uuid.Str, d.entries.at(prev).line)
	}
	switch {
	case parent.Type == gjson.String && parent.Str != "":
		e.parent = d.ids.intern(parent.Str)
	case parent.Type != gjson.Null && parent.Type != gjson.String:
		return trajectory.Errorf(line, "parentUuid is neither a string nor null")
	case logical.Type == gjson.String && logical.Str != "":
		// Compaction restarts the chain with parentUuid null; following
		// the logical parent keeps the earlier history, whose side
		// effects the replay must reproduce.
		e.parent = d.ids.intern(logical.Str)
		e.flags |= flagLogical
	}
	d.grow(e.parent)
	if ver.Type == gjson.String {
		e.version = d.versions.intern(ver.Str)
	}
	if sess.Type == gjson.String {
		e.session = d.sessions.intern(sess.Str)
	}
	if cwd.Type == gjson.String {
		e.cwd = d.cwds.intern(cwd.Str)
	}
	var err error
	switch kind {
	case kindAssistant:
		err = d.assistant(&e, msg, apiErr)
	case kindUser:
		err = d.user(&e, msg)
	}
	if err != nil {
		return err
	}
	d.entryOf[e.uuid] = d.entries.len()
	if kind != kindOther {
		d.leaf = d.entries.len()
	}
	d.entries.add(e)
	return nil
}

// codexRecordTypes are the envelope types of a Codex rollout line; Claude
// Code writes none of them, so one means a rollout was appended.
var codexRecordTypes = map[string]bool{
	"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true, "compacted": true,
}

func (d *decoder) grow(id int32) {
	for int(id) >= len(d.entryOf) {
		d.entryOf = append(d.entryOf, -1)
	}
}

func (d *decoder) assistant(e *entry, msg gjson.Result, apiErr bool) error {
	var content gjson.Result
	synthetic := apiErr
	rawjson.EachOf(msg, messageKeys, func(k, v gjson.Result) bool {
		switch k.Str {
		case "id":
			if v.Type == gjson.String && v.Str != "" {
				e.msg = d.internMsg(v.Str)
			}
		case "model":
			// The CLI writes "<synthetic>" assistant entries itself (API
			// errors, "No response requested."): no model turn happened.
			synthetic = synthetic || v.Str == "<synthetic>"
		case "content":
			content = v
		}
		return true
	})
	if synthetic {
		e.flags |= flagSynthetic
	}
	e.data = int32(len(d.blocks))
	if content.Type == gjson.String && !d.lean {
		d.addBlock(block{kind: blockText}, blockBody{text: d.keep(content.Str)})
	}
	var err error
	rawjson.Each(content, func(_, b gjson.Result) bool {
		if !b.IsObject() {
			return true
		}
		var typ, text, thinking, id, name, input gjson.Result
		rawjson.EachOf(b, blockKeys, func(k, v gjson.Result) bool {
			switch k.Str {
			case "type":
				typ = v
			case "text":
				text = v
			case "thinking":
				thinking = v
			case "id":
				id = v
			case "name":
				name = v
			case "input":
				input = v
			}
			return true
		})
		switch typ.Str {
		case "text":
			if !d.lean {
				d.addBlock(block{kind: blockText}, blockBody{text: d.keep(text.Str)})
			}
		case "thinking":
			if !d.lean {
				d.addBlock(block{kind: blockThinking}, blockBody{text: d.keep(thinking.Str)})
			}
		case "tool_use":
			if id.Type != gjson.String || id.Str == "" {
				err = trajectory.Errorf(int(e.line), "tool_use block has no id")
				return false
			}
			if name.Type != gjson.String || name.Str == "" {
				err = trajectory.Errorf(int(e.line), "tool_use %s has no name", id.Str)
				return false
			}
			var in []byte
			switch {
			case d.lean:
			case !input.Exists():
				in = []byte("{}")
			default:
				in = []byte(input.Raw)
			}
			var body blockBody
			if !d.lean {
				body = blockBody{text: d.keep(id.Str), input: in}
			}
			d.addBlock(block{kind: blockToolUse, id: d.hash(id.Str), name: d.name(name.Str)}, body)
		}
		// redacted_thinking, server_tool_use and other blocks are not
		// client tool calls and carry no visible text.
		return true
	})
	e.ndata = int32(len(d.blocks)) - e.data
	return err
}

func (d *decoder) user(e *entry, msg gjson.Result) error {
	var content gjson.Result
	if msg.IsObject() {
		rawjson.EachOf(msg, contentKey, func(_, v gjson.Result) bool {
			content = v // the first, as Get
			return false
		})
	}
	if !content.IsArray() {
		return nil
	}
	e.data = int32(len(d.results))
	var err error
	rawjson.Each(content, func(_, b gjson.Result) bool {
		if !b.IsObject() {
			return true
		}
		// One pass over the block, the first of a repeated key winning as
		// with Get; a result content not wanted is stepped over unread.
		var f [4]gjson.Result
		keys := resultKeys
		if d.opts.SkipObservationContent || d.lean {
			keys = keys[:3]
		}
		rawjson.EachOf(b, keys, func(k, v gjson.Result) bool {
			if i := slices.Index(keys, k.Str); !f[i].Exists() {
				f[i] = v
			}
			return true
		})
		typ, id, isErr, body := f[0], f[1], f[2], f[3]
		if typ.Str != "tool_result" {
			return true
		}
		if id.Type != gjson.String || id.Str == "" {
			err = trajectory.Errorf(int(e.line), "tool_result block has no tool_use_id")
			return false
		}
		d.results = append(d.results, result{id: d.hash(id.Str), isError: isErr.Type == gjson.True})
		if !d.lean {
			rb := resultBody{toolUseID: d.keep(id.Str)}
			if !d.opts.SkipObservationContent {
				rb.content = d.keep(resultText(body))
			}
			d.rbodies = append(d.rbodies, rb)
		}
		return true
	})
	e.ndata = int32(len(d.results)) - e.data
	if e.ndata > 0 {
		e.flags |= flagResults
	}
	return err
}

// resultText is the model-visible text of a tool_result content: the string
// itself, or the text blocks of a block array joined with "\n" (images and
// other non-text blocks have no text form and are left out).
func resultText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	if !c.IsArray() {
		return ""
	}
	var parts []string
	rawjson.Each(c, func(_, b gjson.Result) bool {
		if b.Get("type").Str == "text" {
			parts = append(parts, b.Get("text").Str)
		}
		return true
	})
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts, "\n")
}

// name interns a tool name: a session uses a handful, thousands of times.
func (d *decoder) name(s string) uint32 {
	if n, ok := d.names[s]; ok {
		return n
	}
	n := uint32(len(d.toolNames))
	s = strings.Clone(s)
	d.names[s] = n
	d.toolNames = append(d.toolNames, s)
	return n
}

// addBlock appends b, and its body unless the pass is lean.
func (d *decoder) addBlock(b block, body blockBody) {
	d.blocks = append(d.blocks, b)
	if !d.lean {
		d.bodies = append(d.bodies, body)
	}
}

func (d *decoder) internMsg(s string) int32 {
	h := d.hash(s)
	if id, ok := d.msgIDs[h]; ok {
		return id
	}
	id := d.nmsg
	d.nmsg++
	d.msgIDs[h] = id
	if !d.lean {
		d.msgNames = append(d.msgNames, d.keep(s))
	}
	return id
}

// hash stands for a message or tool_use id.
func (d *decoder) hash(s string) uint64 { return maphash.String(d.seed, s) }

// idTable interns uuids. Canonical UUIDs are keyed by their 16 bytes, which
// halves the per-entry cost of the map on large files; anything else (test
// fixtures use ids like "u1") falls back to a string key.
type idTable struct {
	bin map[[16]byte]int32
	str map[string]int32
	n   int32
}

func newIDTable() idTable {
	return idTable{bin: make(map[[16]byte]int32), str: make(map[string]int32)}
}

func (t *idTable) intern(s string) int32 {
	if k, ok := parseUUID(s); ok {
		if id, ok := t.bin[k]; ok {
			return id
		}
		t.bin[k] = t.n
	} else {
		if id, ok := t.str[s]; ok {
			return id
		}
		t.str[strings.Clone(s)] = t.n
	}
	t.n++
	return t.n - 1
}

// name returns the uuid string of id; only used to word errors.
func (t *idTable) name(id int32) string {
	for k, v := range t.bin {
		if v == id {
			return formatUUID(k)
		}
	}
	for k, v := range t.str {
		if v == id {
			return k
		}
	}
	return "?"
}

func parseUUID(s string) (k [16]byte, ok bool) {
	// Only the lower-case canonical form round-trips through formatUUID.
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return k, false
	}
	for j, i := 0, 0; j < 16; j, i = j+1, i+2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
		}
		hi, ok1 := unhex(s[i])
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return k, false
		}
		k[j] = hi<<4 | lo
	}
	return k, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

func formatUUID(k [16]byte) string {
	const hexdig = "0123456789abcdef"
	var b [36]byte
	j := 0
	for i, c := range k {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = hexdig[c>>4], hexdig[c&15]
		j += 2
	}
	return string(b[:])
}

// strTable interns the few distinct version and session strings; index 0
// means "none".
type strTable struct {
	idx  map[string]uint16
	list []string
}

func (t *strTable) init() {
	t.idx = make(map[string]uint16)
	t.list = []string{""}
}

func (t *strTable) intern(s string) uint16 {
	if s == "" {
		return 0
	}
	if i, ok := t.idx[s]; ok {
		return i
	}
	if len(t.list) >= 1<<16-1 {
		return 0
	}
	s = strings.Clone(s)
	t.idx[s] = uint16(len(t.list))
	t.list = append(t.list, s)
	return uint16(len(t.list) - 1)
}
