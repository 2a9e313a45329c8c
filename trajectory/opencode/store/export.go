package store

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Export prints session id as `opencode export <id>` does on stdout:
// JSON.stringify({info, messages}, null, 2) and a newline. ok is false
// when there is no such session.
func (d *DB) Export(id string) (doc []byte, ok bool, err error) {
	info, ok, err := d.sessionInfo(id)
	if err != nil || !ok {
		return nil, ok, err
	}
	if err := d.checkSize(id); err != nil {
		return nil, true, err
	}
	var b bytes.Buffer
	b.WriteString(`{"info":`)
	b.WriteString(info)
	b.WriteString(`,"messages":[`)
	parts, err := d.parts(id)
	if err != nil {
		return nil, false, err
	}
	rows, err := d.db.Query(`SELECT id, session_id, data FROM message WHERE session_id = ? ORDER BY time_created, id`, id)
	if err != nil {
		return nil, false, fmt.Errorf("reading the messages of %s: %w", id, err)
	}
	defer rows.Close()
	for n := 0; rows.Next(); n++ {
		var mid, sid, data string
		if err := rows.Scan(&mid, &sid, &data); err != nil {
			return nil, false, err
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"info":`)
		if err := withIDs(&b, data, [][2]string{{"id", mid}, {"sessionID", sid}}); err != nil {
			return nil, false, fmt.Errorf("message %s: %w", mid, err)
		}
		b.WriteString(`,"parts":[`)
		for i, p := range parts[mid] {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := withIDs(&b, p.data, [][2]string{{"id", p.id}, {"sessionID", p.sid}, {"messageID", mid}}); err != nil {
				return nil, false, fmt.Errorf("part %s: %w", p.id, err)
			}
		}
		b.WriteString(`]}`)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	b.WriteString(`]}`)
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, false, fmt.Errorf("session %s: the rows do not make a JSON document: %w", id, err)
	}
	out.WriteByte('\n')
	return out.Bytes(), true, nil
}

type partRow struct{ id, sid, data string }

// parts are the session's parts by message, each message's ordered by id.
func (d *DB) parts(id string) (map[string][]partRow, error) {
	rows, err := d.db.Query(`SELECT id, message_id, session_id, data FROM part WHERE session_id = ? ORDER BY message_id, id`, id)
	if err != nil {
		return nil, fmt.Errorf("reading the parts of %s: %w", id, err)
	}
	defer rows.Close()
	out := map[string][]partRow{}
	for rows.Next() {
		var p partRow
		var mid string
		if err := rows.Scan(&p.id, &mid, &p.sid, &p.data); err != nil {
			return nil, err
		}
		out[mid] = append(out[mid], p)
	}
	return out, rows.Err()
}

// withIDs writes the JSON object data with the ids as its last members
// ({...data, id, …} in JavaScript: a key data already has keeps its place
// and takes the new value).
func withIDs(b *bytes.Buffer, data string, ids [][2]string) error {
	var keys []string
	dec := json.NewDecoder(strings.NewReader(data))
	dec.UseNumber()
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return fmt.Errorf("data is not a JSON object")
	}
	// The key order of data: walk it once more.
	dec = json.NewDecoder(strings.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	for _, kv := range ids {
		if _, ok := obj[kv[0]]; !ok {
			keys = append(keys, kv[0])
		}
		obj[kv[0]] = json.RawMessage(jsString(kv[1]))
	}
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsString(k))
		b.WriteByte(':')
		b.Write(obj[k])
	}
	b.WriteByte('}')
	return nil
}

// sessionInfo is the 1.18 CLI's fromRow of the session row, as compact
// JSON in its key order; undefined members are left out as
// JSON.stringify does.
func (d *DB) sessionInfo(id string) (string, bool, error) {
	cols := Tables["session"]
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	err := d.db.QueryRow(`SELECT `+strings.Join(cols, ", ")+` FROM session WHERE id = ?`, id).Scan(ptrs...)
	if err == sql.ErrNoRows {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading session %s: %w", id, err)
	}
	r := map[string]any{}
	for i, c := range cols {
		r[c] = vals[i]
	}
	o := &object{}
	o.str("id", r["id"])
	o.str("slug", r["slug"])
	o.str("projectID", r["project_id"])
	o.str("workspaceID", r["workspace_id"])
	o.str("directory", r["directory"])
	o.str("path", r["path"])
	o.str("parentID", r["parent_id"])
	o.str("title", r["title"])
	o.str("agent", r["agent"])
	if m, err := parsed(r["model"]); err != nil {
		return "", false, fmt.Errorf("session %s model: %w", id, err)
	} else if m != nil {
		mo := &object{}
		mo.raw("id", m["id"])
		mo.raw("providerID", m["providerID"])
		mo.raw("variant", m["variant"])
		o.raw("model", mo.json())
	}
	o.str("version", r["version"])
	if r["summary_additions"] != nil || r["summary_deletions"] != nil || r["summary_files"] != nil {
		so := &object{}
		so.num("additions", orZero(r["summary_additions"]))
		so.num("deletions", orZero(r["summary_deletions"]))
		so.num("files", orZero(r["summary_files"]))
		so.rawText("diffs", r["summary_diffs"])
		o.raw("summary", so.json())
	}
	o.num("cost", orZero(r["cost"]))
	to := &object{}
	to.num("input", r["tokens_input"])
	to.num("output", r["tokens_output"])
	to.num("reasoning", r["tokens_reasoning"])
	co := &object{}
	co.num("read", r["tokens_cache_read"])
	co.num("write", r["tokens_cache_write"])
	to.raw("cache", co.json())
	o.raw("tokens", to.json())
	if s, ok := r["share_url"].(string); ok && s != "" {
		o.raw("share", `{"url":`+jsString(s)+`}`)
	}
	o.rawText("metadata", r["metadata"])
	if rv, err := parsed(r["revert"]); err != nil {
		return "", false, fmt.Errorf("session %s revert: %w", id, err)
	} else if rv != nil {
		ro := &object{}
		for _, k := range []string{"messageID", "partID", "snapshot", "diff"} {
			ro.raw(k, rv[k])
		}
		o.raw("revert", ro.json())
	}
	o.rawText("permission", r["permission"])
	tt := &object{}
	tt.num("created", r["time_created"])
	tt.num("updated", r["time_updated"])
	tt.num("compacting", r["time_compacting"])
	tt.num("archived", r["time_archived"])
	o.raw("time", tt.json())
	return o.json(), true, nil
}

// object builds a compact JSON object, leaving out undefined members.
type object struct{ parts []string }

func (o *object) raw(k string, v string) {
	if v != "" {
		o.parts = append(o.parts, jsString(k)+":"+v)
	}
}

func (o *object) str(k string, v any) {
	if s, ok := text(v); ok {
		o.raw(k, jsString(s))
	}
}

func (o *object) rawText(k string, v any) {
	if s, ok := text(v); ok {
		o.raw(k, s)
	}
}

func (o *object) num(k string, v any) {
	switch n := v.(type) {
	case int64:
		o.raw(k, strconv.FormatInt(n, 10))
	case float64:
		o.raw(k, jsNumber(n))
	}
}

func (o *object) json() string { return "{" + strings.Join(o.parts, ",") + "}" }

func text(v any) (string, bool) {
	switch s := v.(type) {
	case string:
		return s, true
	case []byte:
		return string(s), true
	}
	return "", false
}

func orZero(v any) any {
	if v == nil {
		return int64(0)
	}
	return v
}

// parsed is a JSON text column as raw members, nil when NULL.
func parsed(v any) (map[string]string, error) {
	s, ok := text(v)
	if !ok {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, r := range m {
		if string(r) != "null" {
			out[k] = string(r)
		}
	}
	return out, nil
}

// jsNumber formats f as JavaScript's Number#toString does for the values
// a row holds (integers and plain decimals; exponents outside 1e-6..1e21).
func jsNumber(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	if a := math.Abs(f); a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // 1e-08 → 1e-8, 1e+21 → 1e+21
	mant, exp, _ := strings.Cut(s, "e")
	sign, digits := exp[:1], strings.TrimLeft(exp[1:], "0")
	return mant + "e" + sign + digits
}

// jsString quotes s as JSON.stringify does: only '"', '\\' and control
// characters escaped (short forms where JSON has them), invalid UTF-8 as
// U+FFFD.
func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
