package kimi

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
	store "github.com/pvisor/pvisor/trajectory/session"
)

// Sessions is Kimi Code's session store: <KIMI_CODE_HOME or
// ~/.kimi-code>/sessions/wd_<slug(basename(cwd))>_<sha256(cwd)[:12]>/session_<uuid>/,
// a directory whose agents/main/wire.jsonl is the session and whose
// state.json and file-history go with it. logs/, notify/, tasks/, cron/ and
// lock files are a running CLI's, and session_index.jsonl, workspaces.json
// and sessions/.index-dirty/ beside the directory are indexes Kimi rebuilds
// (measured: a restore of the directory alone resumes): none is part of a
// session.
func Sessions() store.Store { return sessions{} }

type sessions struct{}

func (sessions) Agent() string { return AgentName }

func (sessions) Root(home string, getenv func(string) string) (string, error) {
	return store.RootFrom(home, ".kimi-code", "KIMI_CODE_HOME", getenv)
}

// notSession are the directories of a session that hold a running CLI's
// state, not the conversation.
var notSession = map[string]bool{"logs": true, "notify": true, "tasks": true, "cron": true}

// Locate finds sessions/*/<id>/agents/main/wire.jsonl (exactly one: the
// directory is found by id, never by a cwd) and lists the rest of the
// session directory as sidecars; a symlink or FIFO in it is listed so that
// capture sees it and refuses it.
func (sessions) Locate(root, id string) (*store.Located, error) {
	main, err := store.FindOne(AgentName, root, id, filepath.Join("sessions", "*", id, "agents", "main", "wire.jsonl"),
		func(base string) bool { return base == "wire.jsonl" })
	if err != nil {
		return nil, err
	}
	loc := &store.Located{Agent: AgentName, ID: id, Root: root, Main: main, SidecarRole: "session_file"}
	dir := filepath.Join(root, filepath.Dir(filepath.Dir(filepath.Dir(main))))
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && filepath.Dir(p) == dir && notSession[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".lock") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if rel != main {
			loc.Sidecars = append(loc.Sidecars, rel)
		}
		return nil
	})
	return loc, err
}

// Place moves the session into the directory Kimi names for cwd:
// sessions/<WorkspaceID(cwd)>/<id>/….
func (sessions) Place(rel, cwd string) string {
	return store.ReplaceDir(rel, 2, "sessions", WorkspaceID(cwd))
}

// Origin is the cwd profile.bind discloses to the model; the wire log
// records no CLI version.
func (sessions) Origin(r io.Reader) (store.Origin, error) {
	var o store.Origin
	err := store.Scan(r, func(line []byte) bool {
		if gjson.GetBytes(line, "type").Str == "profile.bind" {
			o.Cwd = gjson.GetBytes(line, "environmentDisclosure.cwd").Str
			return o.Cwd != ""
		}
		return false
	})
	return o, err
}

// Derived is the name Kimi derives from a cwd: its workspace id.
func (sessions) Derived(cwd string) []string { return []string{WorkspaceID(cwd)} }

// RecordsCwd: only the wire logs (agents/<name>/wire.jsonl) and state.json
// of a session directory record the cwd; file-history holds copies of the
// user's files, which are restored as they are.
func (sessions) RecordsCwd(rel string) bool {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) < 4 || parts[0] != "sessions" {
		return true // not a session file as Locate lists them: rewrite, to be safe
	}
	in := parts[3:] // below sessions/<wd>/<id>/
	return len(in) == 1 && in[0] == "state.json" || len(in) == 3 && in[0] == "agents" && in[2] == "wire.jsonl"
}

// Describe says where the CLI keeps sessions and what Rewrite replaces.
func (sessions) Describe() string {
	return "<home>/.kimi-code (else KIMI_CODE_HOME), the session directory whole; rewrite: wire.jsonl's runtime.set_binding.workspaceId, profile.bind's environmentDisclosure.cwd and systemPrompt cwd, tool.call displays; state.json's cwd and agents.*.homedir"
}

// Rewrite moves a session file from cwd from to to. In the wire log:
// runtime.set_binding.workspaceId (Kimi refuses to resume a session whose
// binding names another workspace: measured), profile.bind's
// environmentDisclosure.cwd and the cwd in its systemPrompt (reused
// verbatim on resume, so the model would see the old cwd), and the cwd and
// paths below it in tool.call displays. In state.json (one line): cwd, and
// the workspace directory in agents.*.homedir (Kimi resets homedir to where
// it finds the session on resume: measured). Any other file, file-history's
// copies included, has none of these records and is copied as it is.
func (sessions) Rewrite(w io.Writer, r io.Reader, from, to string) (int, error) {
	if err := store.CheckRewrite(from, to); err != nil {
		return 0, err
	}
	rw := newPathRewrite(from, to)
	return store.RewriteLines(w, r, to, func(_ int, line []byte) ([]store.Span, error) {
		var spans []store.Span
		add := func(v gjson.Result, with func(raw []byte) []byte) error {
			if v.Type != gjson.String {
				return nil
			}
			out := with([]byte(v.Raw))
			if bytes.Equal(out, []byte(v.Raw)) {
				return nil
			}
			if v.Index <= 0 {
				return fmt.Errorf("cannot locate the value %s in the line", v.Raw)
			}
			spans = append(spans, store.Span{Off: v.Index, Len: len(v.Raw), With: out})
			return nil
		}
		var err error
		switch typ := gjson.GetBytes(line, "type"); {
		case typ.Str == "runtime.set_binding":
			err = add(gjson.GetBytes(line, "workspaceId"), rw.workspace)
		case typ.Str == "profile.bind":
			err = firstErr(add(gjson.GetBytes(line, "systemPrompt"), rw.inText),
				add(gjson.GetBytes(line, "environmentDisclosure.cwd"), rw.path))
		case typ.Str == "context.append_loop_event" && gjson.GetBytes(line, "event.type").Str == "tool.call":
			err = firstErr(add(gjson.GetBytes(line, "event.display.cwd"), rw.path),
				add(gjson.GetBytes(line, "event.display.path"), rw.path))
		case !typ.Exists() && gjson.GetBytes(line, "version").Exists() && gjson.GetBytes(line, "agents").IsObject():
			err = add(gjson.GetBytes(line, "cwd"), rw.path)
			gjson.GetBytes(line, "agents").ForEach(func(_, a gjson.Result) bool {
				if err == nil {
					err = add(a.Get("homedir"), rw.homedir)
				}
				return err == nil
			})
		}
		return spans, err
	})
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// pathRewrite replaces a cwd in raw JSON strings (quotes included), on the
// escaped bytes, so every other byte of the string stays as Kimi wrote it.
type pathRewrite struct {
	from, to     []byte // the cwds as they appear inside a JSON string
	fromWD, toWD []byte
}

func newPathRewrite(from, to string) pathRewrite {
	esc := func(s string) []byte { q := jsstr.AppendQuote(nil, s); return q[1 : len(q)-1] }
	return pathRewrite{from: esc(from), to: esc(to), fromWD: esc(WorkspaceID(from)), toWD: esc(WorkspaceID(to))}
}

// path: a value that is the cwd or a path below it.
func (p pathRewrite) path(raw []byte) []byte {
	in := raw[1 : len(raw)-1]
	if bytes.Equal(in, p.from) || bytes.HasPrefix(in, append(append([]byte{}, p.from...), '/')) {
		return quoteRaw(append(append([]byte{}, p.to...), in[len(p.from):]...))
	}
	return raw
}

// inText: every occurrence of the cwd in text that is not the start of a
// longer name (/repo in /repo2 is not the cwd /repo).
func (p pathRewrite) inText(raw []byte) []byte {
	return replaceBounded(raw, p.from, p.to)
}

func (p pathRewrite) workspace(raw []byte) []byte {
	if bytes.Equal(raw[1:len(raw)-1], p.fromWD) {
		return quoteRaw(p.toWD)
	}
	return raw
}

// homedir: <root>/sessions/<workspace id>/<id>/agents/<name> with the
// workspace id of the new cwd.
func (p pathRewrite) homedir(raw []byte) []byte {
	return bytes.Replace(raw, []byte("/sessions/"+string(p.fromWD)+"/"), []byte("/sessions/"+string(p.toWD)+"/"), 1)
}

func quoteRaw(in []byte) []byte { return append(append([]byte{'"'}, in...), '"') }

// replaceBounded replaces each from in s whose next byte does not go on
// with a name (a letter, a digit, '.', '-' or '_').
func replaceBounded(s, from, to []byte) []byte {
	var out []byte
	at := 0
	for {
		i := bytes.Index(s[at:], from)
		if i < 0 {
			break
		}
		i += at
		end := i + len(from)
		if end < len(s) && nameByte(s[end]) {
			out = append(out, s[at:end]...)
			at = end
			continue
		}
		out = append(append(out, s[at:i]...), to...)
		at = end
	}
	if out == nil {
		return s
	}
	return append(out, s[at:]...)
}

func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_'
}
