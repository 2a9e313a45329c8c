package claude

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory/session"
)

// Sessions is Claude Code's session store: <CLAUDE_CONFIG_DIR or
// ~/.claude>/projects/<ProjectKey(cwd)>/<id>.jsonl, with the transcripts of
// its subagents in <id>/subagents/ next to it.
func Sessions() session.Store { return sessions{} }

type sessions struct{}

func (sessions) Agent() string { return AgentName }

func (sessions) Root(home string, getenv func(string) string) (string, error) {
	return session.RootFrom(home, ".claude", "CLAUDE_CONFIG_DIR", getenv)
}

// Locate globs every project directory for the id: the project key of a
// cwd depends on realpath and, for long paths, on the CLI version, so a
// path rebuilt from a cwd can miss.
func (sessions) Locate(root, id string) (*session.Located, error) {
	main, err := session.FindOne(AgentName, root, id, filepath.Join("projects", "*", id+".jsonl"),
		func(base string) bool { return base == id+".jsonl" })
	if err != nil {
		return nil, err
	}
	loc := &session.Located{Agent: AgentName, ID: id, Root: root, Main: main, SidecarRole: "subagent"}
	sub := filepath.Join(filepath.Dir(main), id, "subagents")
	// WalkDir does not follow symlinks: symlinked transcripts, and a symlinked
	// subagents directory itself, are listed so that capture refuses them.
	err = filepath.WalkDir(filepath.Join(root, sub), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == filepath.Join(root, sub) && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipDir
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		top := p == filepath.Join(root, sub) && d.Type()&fs.ModeSymlink != 0
		if base := d.Name(); top || strings.HasPrefix(base, "agent-") && strings.HasSuffix(base, ".jsonl") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			loc.Sidecars = append(loc.Sidecars, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(loc.Sidecars)
	return loc, nil
}

// Place moves a file into the project directory of cwd, which Claude Code
// keys by its realpath (the caller resolves it).
func (sessions) Place(rel, cwd string) string {
	return session.ReplaceDir(rel, 2, "projects", ProjectKey(cwd))
}

// FileID is the sessionId every entry records.
func (sessions) FileID(first []byte) string { return gjson.GetBytes(first, "sessionId").Str }

// NewID is a random UUID, as Claude Code makes them.
func (sessions) NewID() string { return uuid.NewString() }

// File is <id>.jsonl in the project directory of cwd.
func (sessions) File(_ []byte, cwd, id string) (string, error) {
	return filepath.Join("projects", ProjectKey(cwd), id+".jsonl"), nil
}

// Origin is the first entry's cwd (later entries follow the shell's cd)
// and the CLI version Claude Code writes on every entry.
func (sessions) Origin(r io.Reader) (session.Origin, error) {
	var o session.Origin
	err := session.Scan(r, func(line []byte) bool {
		res := gjson.GetManyBytes(line, "cwd", "version")
		if o.Cwd == "" && res[0].Type == gjson.String {
			o.Cwd = res[0].Str
		}
		if o.CLIVersion == "" && res[1].Type == gjson.String {
			o.CLIVersion = res[1].Str
		}
		return o.Cwd != "" && o.CLIVersion != ""
	})
	return o, err
}

// Describe says where the CLI keeps sessions and what Rewrite replaces.
func (sessions) Describe() string {
	return "<home>/.claude (else CLAUDE_CONFIG_DIR, else $HOME/.claude), with its subagent transcripts; rewrite: each entry's top-level cwd"
}

// Rewrite replaces the top-level cwd of each entry that recorded exactly
// from. Message text and tool inputs keep their paths: the model saw them.
func (sessions) Rewrite(w io.Writer, r io.Reader, from, to string) (int, error) {
	if err := session.CheckRewrite(from, to); err != nil {
		return 0, err
	}
	return session.RewriteLines(w, r, to, func(_ int, line []byte) ([]session.Span, error) {
		s, ok, err := session.StringAt(gjson.GetBytes(line, "cwd"), from)
		if !ok {
			return nil, err
		}
		return []session.Span{s}, nil
	})
}
