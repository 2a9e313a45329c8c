package opencode

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// SynthOptions supply what `opencode run --format json` does not print but
// an export needs. Zero values get the defaults noted.
type SynthOptions struct {
	// Prompt is the user's message that started the run. The events do not
	// carry it; "" writes promptPlaceholder.
	Prompt string
	// ProviderID and ModelID name the model (default "opencode"/"unknown");
	// the continuation's --model decides what actually answers.
	ProviderID, ModelID string
	Agent               string // default "build"
	Title               string // session title, default ""
	Version             string // OpenCode version, default the trajectory's
}

const promptPlaceholder = "(the prompt of this run is not recorded in its `opencode run --format json` output)"

// userIDSuffix and userPartSuffix complete the ids minted for the user
// message, which the events do not show (14 characters, as OpenCode's
// random id tails).
const (
	userIDSuffix   = "pvisorUserMsg0"
	userPartSuffix = "pvisorUserPrt0"
)

type synthMsg struct {
	id          string
	parts       [][]byte
	byID        map[string]int
	start, done int64
	finish      gjson.Result // the step-finish part
}

// synthesize builds an export document from the run events through the
// boundary step: the session info (id = the events' sessionID, directory =
// Trajectory.Cwd), one user message holding the prompt, and one assistant
// message per messageID with its parts exactly as the events printed them
// (a part reported twice keeps its last report), tool states replaced by the
// fresh results. What the events do not record is filled in: the user
// message and its ids, the model, agent and mode, the message times (from
// the event timestamps), path {cwd, root}, and snapshot/patch parts other
// than those on step-start and step-finish.
func synthesize(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int,
	repl map[string]trajectory.Fresh, opts SynthOptions) error {
	a, _ := t.Step(afterStep)
	end := a.Locator.EndByte
	if a.Locator.Unit != "line" || end <= 0 || end > size {
		return &trajectory.Error{Kind: trajectory.Malformed, Line: a.Locator.Last,
			Msg:  fmt.Sprintf("step %d does not point at bytes of this file", afterStep),
			Hint: "decode the same file that is passed as the source"}
	}
	var msgs []*synthMsg
	index := map[string]*synthMsg{}
	var first, last int64
	jr := jsonl.NewReader(io.NewSectionReader(src, 0, end))
	for jr.Next() {
		ln := jr.Line()
		ev := gjson.ParseBytes(ln.Data)
		typ := ev.Get("type").Str
		part := ev.Get("part")
		if partOf[typ] == "" || !part.IsObject() {
			continue
		}
		ts := ev.Get("timestamp").Int()
		if first == 0 || ts < first {
			first = ts
		}
		last = max(last, ts)
		mid := part.Get("messageID").Str
		m := index[mid]
		if m == nil {
			m = &synthMsg{id: mid, byID: map[string]int{}, start: ts}
			index[mid] = m
			msgs = append(msgs, m)
		}
		m.done = max(m.done, ts)
		raw := []byte(part.Raw)
		if typ == "tool_use" {
			doc := append(append([]byte(`{"parts":[`), raw...), ']', '}')
			edited, err := editParts(doc, "parts", repl)
			if err != nil {
				return err
			}
			raw = edited[len(`{"parts":[`) : len(edited)-2]
		}
		if typ == "step_finish" {
			m.finish = gjson.ParseBytes(raw)
		}
		pid := part.Get("id").Str
		if i, ok := m.byID[pid]; ok && pid != "" {
			m.parts[i] = raw
			continue
		}
		m.byID[pid] = len(m.parts)
		m.parts = append(m.parts, raw)
	}
	if err := jr.Err(); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return &trajectory.Error{Kind: trajectory.Malformed, Msg: "no steps before the boundary"}
	}
	provider, model, agent := or(opts.ProviderID, "opencode"), or(opts.ModelID, "unknown"), or(opts.Agent, "build")
	version := or(opts.Version, t.Version)
	sid := t.SessionID
	cwd := t.Cwd
	userID := "msg_" + before(msgs[0].id, "msg_") + userIDSuffix
	partID := "prt_" + before(msgs[0].id, "msg_") + userPartSuffix
	prompt := or(opts.Prompt, promptPlaceholder)

	var b bytes.Buffer
	b.WriteString(`{"info":`)
	writeObj(&b, jobj{{"id", sid}, {"slug", ""}, {"projectID", "global"}, {"directory", cwd}, {"title", opts.Title},
		{"version", version}, {"time", jobj{{"created", int(first)}, {"updated", int(last)}}}})
	b.WriteString(`,"messages":[` + "\n")
	writeObj(&b, jobj{
		{"info", jobj{{"role", "user"}, {"time", jobj{{"created", int(first)}}}, {"agent", agent},
			{"model", jobj{{"providerID", provider}, {"modelID", model}}}, {"id", userID}, {"sessionID", sid}}},
		{"parts", []jobj{{{"type", "text"}, {"text", prompt}, {"id", partID}, {"sessionID", sid}, {"messageID", userID}}}}})
	for _, m := range msgs {
		b.WriteString(",\n")
		tokens := m.finish.Get("tokens")
		info := jobj{{"parentID", userID}, {"role", "assistant"}, {"mode", agent}, {"agent", agent},
			{"path", jobj{{"cwd", cwd}, {"root", cwd}}}, {"cost", rawOr(m.finish.Get("cost"), "0")},
			{"tokens", rawOr(tokens, `{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}`)},
			{"modelID", model}, {"providerID", provider}}
		tm := jobj{{"created", int(m.start)}}
		if m.finish.Exists() {
			tm = append(tm, jkv{"completed", int(m.done)})
		}
		info = append(info, jkv{"time", tm})
		if r := m.finish.Get("reason"); r.Type == gjson.String {
			info = append(info, jkv{"finish", r.Str})
		}
		info = append(info, jkv{"id", m.id}, jkv{"sessionID", sid})
		b.WriteString(`{"info":`)
		writeObj(&b, info)
		b.WriteString(`,"parts":[`)
		for i, p := range m.parts {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(compactJSON(p))
		}
		b.WriteString("]}")
	}
	b.WriteString("\n]}\n")
	_, err := w.Write(b.Bytes())
	return err
}

func writeObj(b *bytes.Buffer, o jobj) { encodeJS(b, o) }

// rawOr is a JSON value copied as recorded, or def when absent.
func rawOr(r gjson.Result, def string) jsonValue {
	if !r.Exists() {
		return jsonValue(def)
	}
	return jsonValue(r.Raw)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// before is the 12 hex digits of an ascending OpenCode id, less one, so a
// minted id sorts before it; "000000000000" when id has another shape.
func before(id, prefix string) string {
	hex, ok := strings.CutPrefix(id, prefix)
	if !ok || len(hex) < 12 {
		return "000000000000"
	}
	n, err := strconv.ParseUint(hex[:12], 16, 64)
	if err != nil || n == 0 {
		return "000000000000"
	}
	return fmt.Sprintf("%012x", n-1)
}
