package copilot

import (
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	store "github.com/pvisor/pvisor/trajectory/session"
)

// Sessions is Copilot CLI's session store: <COPILOT_HOME or
// ~/.copilot>/session-state/<uuid>/, a directory whose events.jsonl is the
// session and whose other files (workspace.yaml, checkpoints/,
// rewind-file-snapshots/, files/, research/) go with it. The directory is
// named by the id alone, so a restore into another cwd keeps its place.
// session-store.db beside session-state/ is a derived index Copilot rebuilds
// on resume (measured: a restore of the directory alone resumes), and the
// .lock files are a running CLI's: neither is part of a session.
func Sessions() store.Store { return sessions{} }

type sessions struct{}

func (sessions) Agent() string { return AgentName }

func (sessions) Root(home string, getenv func(string) string) (string, error) {
	return store.RootFrom(home, ".copilot", "COPILOT_HOME", getenv)
}

// Locate finds session-state/<id>/events.jsonl and lists the rest of the
// directory as sidecars: every regular file but lock files, and any other
// entry (a symlink, a FIFO) so that capture sees it and refuses it.
func (sessions) Locate(root, id string) (*store.Located, error) {
	main, err := store.FindOne(AgentName, root, id, filepath.Join("session-state", id, "events.jsonl"),
		func(base string) bool { return base == "events.jsonl" })
	if err != nil {
		return nil, err
	}
	loc := &store.Located{Agent: AgentName, ID: id, Root: root, Main: main, SidecarRole: "session_file"}
	dir := filepath.Join(root, "session-state", id)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasSuffix(d.Name(), ".lock") {
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

// Place keeps the layout: the directory is named by the id, not the cwd.
func (sessions) Place(rel, _ string) string { return rel }

// FileID is session.start's sessionId.
func (sessions) FileID(first []byte) string { return gjson.GetBytes(first, "data.sessionId").Str }

// NewID is a random UUID, as Copilot names sessions.
func (sessions) NewID() string { return uuid.NewString() }

// File is session-state/<id>/events.jsonl.
func (sessions) File(_ []byte, _, id string) (string, error) {
	return filepath.Join("session-state", id, "events.jsonl"), nil
}

// Origin is session.start's context.cwd and copilotVersion.
func (sessions) Origin(r io.Reader) (store.Origin, error) {
	var o store.Origin
	err := store.Scan(r, func(line []byte) bool {
		if gjson.GetBytes(line, "type").Str == "session.start" {
			o.Cwd = gjson.GetBytes(line, "data.context.cwd").Str
			o.CLIVersion = gjson.GetBytes(line, "data.copilotVersion").Str
			return true
		}
		return false
	})
	return o, err
}

// RecordsCwd: of a session directory only events.jsonl records the cwd
// through Rewrite (workspace.yaml is rewritten by Resume); checkpoints/,
// rewind-file-snapshots/ and files/ are copies restored as they are.
func (sessions) RecordsCwd(rel string) bool {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) < 3 || parts[0] != "session-state" {
		return true // not a session file as Locate lists them: rewrite, to be safe
	}
	return len(parts) == 3 && parts[2] == "events.jsonl"
}

// Describe says where the CLI keeps sessions and what Rewrite replaces.
func (sessions) Describe() string {
	return "<home>/.copilot (else COPILOT_HOME), the session directory whole; rewrite: data.context.cwd and gitRoot of session.start and every session.resume (workspace.yaml on restore)"
}

// Rewrite replaces the cwd Copilot records in session.start and every
// session.resume (data.context.cwd and gitRoot): it resumes in the cwd it
// is started in, but shows the model the recorded one otherwise. The
// directory's workspace.yaml is rewritten when it is restored (Resume).
func (sessions) Rewrite(w io.Writer, r io.Reader, from, to string) (int, error) {
	if err := store.CheckRewrite(from, to); err != nil {
		return 0, err
	}
	return store.RewriteLines(w, r, to, func(_ int, line []byte) ([]store.Span, error) {
		switch gjson.GetBytes(line, "type").Str {
		case "session.start", "session.resume":
		default:
			return nil, nil
		}
		var spans []store.Span
		for _, k := range []string{"data.context.cwd", "data.context.gitRoot"} {
			s, ok, err := store.StringAt(gjson.GetBytes(line, k), from)
			if err != nil {
				return nil, err
			}
			if ok {
				spans = append(spans, s)
			}
		}
		if len(spans) == 2 && spans[1].Off < spans[0].Off {
			spans[0], spans[1] = spans[1], spans[0]
		}
		return spans, nil
	})
}
