package pi

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
	store "github.com/pvisor/pvisor/trajectory/session"
)

// Sessions is Pi's session sessions: <PI_CODING_AGENT_DIR or
// ~/.pi/agent>/sessions/<SessionDir(cwd)>/<ts>_<id>.jsonl. Pi looks for
// --session <id> in the directory of the current cwd first (elsewhere it
// asks whether to fork, which hangs print mode), so a restore must write
// the file under the new cwd's directory.
func Sessions() store.Store { return sessions{} }

type sessions struct{}

func (sessions) Agent() string { return AgentName }

func (sessions) Root(home string, getenv func(string) string) (string, error) {
	return store.RootFrom(home, filepath.Join(".pi", "agent"), "PI_CODING_AGENT_DIR", getenv)
}

// SessionDir is Pi's directory name for a working directory: the path
// without its leading separators, separators and colons as '-', in "--".
func SessionDir(cwd string) string {
	p := strings.TrimLeft(cwd, "/\\")
	p = strings.NewReplacer("/", "-", "\\", "-", ":", "-").Replace(p)
	return "--" + p + "--"
}

// sessionFileID is the id in a "<ts>_<id>.jsonl" name; the timestamp has
// no '_'.
func sessionFileID(base string) string {
	_, rest, ok := strings.Cut(strings.TrimSuffix(base, ".jsonl"), "_")
	if !ok || !strings.HasSuffix(base, ".jsonl") {
		return ""
	}
	return rest
}

func (sessions) Locate(root, id string) (*store.Located, error) {
	main, err := store.FindOne(AgentName, root, id, filepath.Join("sessions", "*", "*_"+id+".jsonl"),
		func(base string) bool { return sessionFileID(base) == id })
	if err != nil {
		return nil, err
	}
	return &store.Located{Agent: AgentName, ID: id, Root: root, Main: main}, nil
}

// Place moves the file into the session directory of cwd: Pi looks there
// first for --session, and elsewhere asks whether to fork.
func (sessions) Place(rel, cwd string) string {
	return store.ReplaceDir(rel, 2, "sessions", SessionDir(cwd))
}

// FileID is the header's id.
func (sessions) FileID(first []byte) string { return gjson.GetBytes(first, "id").Str }

// NewID is a time-ordered UUID (v7), as Pi makes them.
func (sessions) NewID() string { return store.NewV7() }

// File is <ts>_<id>.jsonl, ts the header's timestamp as Pi names files, in
// the session directory of cwd.
func (sessions) File(first []byte, cwd, id string) (string, error) {
	t, err := time.Parse(time.RFC3339Nano, gjson.GetBytes(first, "timestamp").Str)
	if err != nil {
		return "", fmt.Errorf("the session header has no timestamp: %w", err)
	}
	ts := strings.NewReplacer(":", "-", ".", "-").Replace(t.UTC().Format("2006-01-02T15:04:05.000Z"))
	return filepath.Join("sessions", SessionDir(cwd), ts+"_"+id+".jsonl"), nil
}

// Origin is the header's cwd. Pi records no CLI version in the file (the
// header's "version" is the session format's).
func (sessions) Origin(r io.Reader) (store.Origin, error) {
	var o store.Origin
	err := store.Scan(r, func(line []byte) bool {
		if gjson.GetBytes(line, "type").Str == "session" {
			o.Cwd = gjson.GetBytes(line, "cwd").Str
		}
		return true
	})
	return o, err
}

// Describe says where the CLI keeps sessions and what Rewrite replaces.
func (sessions) Describe() string {
	return "<home>/.pi/agent (else PI_CODING_AGENT_DIR); rewrite: the header's cwd and, since 1.x, the <cwd> section of its system messages"
}

// Rewrite replaces the header's cwd (Pi refuses to resume a session whose
// cwd does not exist) and, since 1.x, the cwd section of its system
// messages ("<cwd>\n/path\n</cwd>"): left as it was, the resumed Pi would
// append a system message that moves the prompt's cwd back to the new one.
func (sessions) Rewrite(w io.Writer, r io.Reader, from, to string) (int, error) {
	if err := store.CheckRewrite(from, to); err != nil {
		return 0, err
	}
	seen := false
	oldSection, newSection := cwdSection(from), jsstr.AppendQuote(nil, cwdSection(to))
	return store.RewriteLines(w, r, to, func(_ int, line []byte) ([]store.Span, error) {
		if !seen {
			seen = true
			if gjson.GetBytes(line, "type").Str != "session" {
				return nil, nil
			}
			s, ok, err := store.StringAt(gjson.GetBytes(line, "cwd"), from)
			if !ok {
				return nil, err
			}
			return []store.Span{s}, nil
		}
		if !bytes.Contains(line, []byte(`"role":"system"`)) || gjson.GetBytes(line, "message.role").Str != "system" {
			return nil, nil
		}
		s, ok, err := store.StringAt(gjson.GetBytes(line, "message.sections.cwd"), oldSection)
		if !ok {
			return nil, err
		}
		s.With = newSection
		return []store.Span{s}, nil
	})
}

// cwdSection is Pi's cwd section of the system prompt (1.x).
func cwdSection(cwd string) string { return "<cwd>\n" + cwd + "\n</cwd>" }
