package store

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"
)

// Place is where `opencode import` would have run: the project OpenCode
// resolves for that directory (its id and worktree) and the directory.
type Place struct {
	ProjectID string // "global" outside a git repository
	Worktree  string // the repository's top level, or the filesystem root
	Directory string
}

// Write inserts the session of an export document as `opencode import`
// run in place.Directory writes it, with now (ms) where the CLI takes the
// clock, and returns the session id. The database must not hold the
// session yet.
func (d *DB) Write(doc []byte, place Place, now int64) (string, error) {
	if !gjson.ValidBytes(doc) {
		return "", fmt.Errorf("the export document is not valid JSON")
	}
	info := gjson.GetBytes(doc, "info")
	sid := info.Get("id").Str
	if sid == "" {
		return "", fmt.Errorf("the export has no info.id")
	}
	rel, err := filepath.Rel(place.Worktree, place.Directory)
	if err != nil || rel == "." {
		rel = ""
	}
	row, err := sessionRow(info, place.ProjectID, place.Directory, filepath.ToSlash(rel))
	if err != nil {
		return "", err
	}
	tx, err := d.db.Begin()
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	cols := Tables["session"]
	if _, err := tx.Exec(`INSERT INTO session (`+strings.Join(cols, ", ")+`) VALUES (?`+strings.Repeat(", ?", len(cols)-1)+`)`, row...); err != nil {
		return "", fmt.Errorf("writing session %s: %w", sid, err)
	}
	msgStmt, err := tx.Prepare(`INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
	if err != nil {
		return "", err
	}
	partStmt, err := tx.Prepare(`INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
	if err != nil {
		return "", err
	}
	for i, m := range gjson.GetBytes(doc, "messages").Array() {
		mi := m.Get("info")
		id := mi.Get("id").Str
		if id == "" {
			return "", fmt.Errorf("message %d has no info.id", i)
		}
		created := now
		if c := mi.Get("time.created"); c.Exists() && c.Type != gjson.Null {
			created = c.Int()
		}
		data, err := without(mi, "id", "sessionID")
		if err != nil {
			return "", fmt.Errorf("message %s: %w", id, err)
		}
		if _, err := msgStmt.Exec(id, sid, created, now, data); err != nil {
			return "", fmt.Errorf("writing message %s: %w", id, err)
		}
		for j, p := range m.Get("parts").Array() {
			pid := p.Get("id").Str
			if pid == "" {
				return "", fmt.Errorf("message %s part %d has no id", id, j)
			}
			data, err := without(p, "id", "sessionID", "messageID")
			if err != nil {
				return "", fmt.Errorf("part %s: %w", pid, err)
			}
			if _, err := partStmt.Exec(pid, p.Get("messageID").Str, sid, now, now, data); err != nil {
				return "", fmt.Errorf("writing part %s: %w", pid, err)
			}
		}
	}
	return sid, tx.Commit()
}

// sessionRow is the session info as the 1.18 CLI's toRow maps it, in
// Tables["session"] order: absent optional fields are NULL, JSON fields
// compact JSON text.
func sessionRow(info gjson.Result, project, dir, rel string) ([]any, error) {
	str := func(path string) any {
		if v := info.Get(path); v.Type == gjson.String {
			return v.Str
		}
		return nil
	}
	num := func(path string, def any) any {
		if v := info.Get(path); v.Type == gjson.Number {
			if v.Num == float64(int64(v.Num)) {
				return int64(v.Num)
			}
			return v.Num
		}
		return def
	}
	raw := func(path string) (any, error) {
		v := info.Get(path)
		if !v.Exists() || v.Type == gjson.Null {
			return nil, nil
		}
		return compact(v.Raw)
	}
	var model any
	if m := info.Get("model"); m.IsObject() {
		var b strings.Builder
		b.WriteString(`{"id":` + jsString(m.Get("id").Str) + `,"providerID":` + jsString(m.Get("providerID").Str))
		if v := m.Get("variant"); v.Type == gjson.String {
			b.WriteString(`,"variant":` + jsString(v.Str))
		}
		b.WriteString("}")
		model = b.String()
	}
	var revert any
	if r := info.Get("revert"); r.IsObject() {
		parts := []string{`"messageID":` + jsString(r.Get("messageID").Str)}
		for _, k := range []string{"partID", "snapshot", "diff"} {
			if v := r.Get(k); v.Type == gjson.String {
				parts = append(parts, `"`+k+`":`+jsString(v.Str))
			}
		}
		revert = "{" + strings.Join(parts, ",") + "}"
	}
	diffs, err := raw("summary.diffs")
	if err != nil {
		return nil, err
	}
	metadata, err := raw("metadata")
	if err != nil {
		return nil, err
	}
	permission, err := raw("permission")
	if err != nil {
		return nil, err
	}
	if t := info.Get("time.created"); t.Type != gjson.Number {
		return nil, fmt.Errorf("the export's info.time.created is not a number")
	}
	return []any{str("id"), project, str("workspaceID"), str("parentID"), str("slug"), dir, rel, str("title"), str("version"),
		str("share.url"), num("summary.additions", nil), num("summary.deletions", nil), num("summary.files", nil), diffs, metadata,
		float64(info.Get("cost").Num),
		num("tokens.input", int64(0)), num("tokens.output", int64(0)), num("tokens.reasoning", int64(0)),
		num("tokens.cache.read", int64(0)), num("tokens.cache.write", int64(0)), revert,
		permission, str("agent"), model, num("time.created", nil), num("time.updated", nil),
		num("time.compacting", nil), num("time.archived", nil)}, nil
}

// without is the object v without the given keys, compact, the other keys
// in their order.
func without(v gjson.Result, drop ...string) (string, error) {
	if !v.IsObject() {
		return "", fmt.Errorf("not a JSON object")
	}
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	var err error
	v.ForEach(func(k, val gjson.Result) bool {
		for _, d := range drop {
			if k.Str == d {
				return true
			}
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(k.Raw)
		b.WriteByte(':')
		err = json.Compact(&b, []byte(val.Raw))
		return err == nil
	})
	b.WriteByte('}')
	return b.String(), err
}

func compact(raw string) (string, error) {
	var b bytes.Buffer
	err := json.Compact(&b, []byte(raw))
	return b.String(), err
}

var _ = sql.ErrNoRows
