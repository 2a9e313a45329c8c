// Package session holds what capture, resume and fork need from every
// agent, agent-neutrally: the Store interface each agent package implements
// (where its CLI keeps a session, the cwd it recorded, the cwd rewrite), id
// checks, a by-id finder and a byte-exact line rewriter. The facts about one
// agent live in that agent's package (trajectory/claude, codex, pi).
package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/uuid"
)

// Rewriter knows what an agent's session file records about its cwd.
type Rewriter interface {
	// Agent is the agent's name (claude-code, codex, pi, opencode).
	Agent() string
	// Origin reads the recorded cwd and CLI version from the main file.
	Origin(r io.Reader) (Origin, error)
	// Rewrite copies a session file from r to w with the recorded cwd from
	// replaced by to in the agent's structural fields only; every other
	// byte is kept. It returns how many values it replaced.
	Rewrite(w io.Writer, r io.Reader, from, to string) (int, error)
	// Describe is one line for 'pvisor session --help': where the CLI
	// keeps its sessions (and the environment variable that moves them)
	// and which fields Rewrite replaces. It lives with the agent so that
	// the command names no agent's layout.
	Describe() string
}

// Store is one agent CLI's native session store of plain files.
type Store interface {
	Rewriter
	// Root is the directory the CLI keeps its state in: under home when
	// home is set (the environment's overrides are ignored then), else from
	// the CLI's own environment variable or $HOME.
	Root(home string, getenv func(string) string) (string, error)
	// Locate finds session id under root by its id, never by a path built
	// from a cwd, with the sidecar files that belong to it.
	Locate(root, id string) (*Located, error)
	// Place is where a file of a session, rel (relative to Root, as Locate
	// returned it), belongs once the session's cwd is cwd: the CLI looks
	// for a session in the directory its cwd names (Claude's project key,
	// Pi's session directory), so a restore into another cwd moves it.
	Place(rel, cwd string) string
}

// CwdRecorder is a Store whose sessions hold files that record no cwd:
// copies of the user's files (Kimi's file-history, Copilot's checkpoints
// and file snapshots), binary ones included. RecordsCwd says whether the
// file at rel (relative to Root, as Locate lists it) records one; a restore
// passes only those through Rewrite, which reads lines and so refuses a
// line over its cap, and copies the others byte for byte. A Store without
// it has every file rewritten.
type CwdRecorder interface {
	RecordsCwd(rel string) bool
}

// Brancher is a Store that can file a rebuilt session as a new one (fork
// --after-step): the id a session file records, a fresh id of the kind the
// CLI makes, and the file the CLI keeps a session with that id in.
type Brancher interface {
	Store
	// FileID is the session id the first line of a session file records.
	FileID(first []byte) string
	// NewID is a fresh session id.
	NewID() string
	// File is where session id, whose first line is first, lives for
	// cwd, relative to Root.
	File(first []byte, cwd, id string) (string, error)
}

// ReplaceDir swaps the first n components of rel for dir's: the usual
// Place for stores keyed by a directory at a fixed depth.
func ReplaceDir(rel string, n int, dir ...string) string {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) <= n {
		return rel
	}
	return filepath.Join(append(dir, parts[n:]...)...)
}

// Located is a session on disk. Paths are relative to Root, so a copy keeps
// the layout the CLI expects (Codex's date directories, Claude's project key).
type Located struct {
	Agent    string
	ID       string
	Root     string
	Main     string
	Sidecars []string
	// SidecarRole is what the sidecars are to the CLI, recorded as their
	// role in a capture's manifest ("subagent" for Claude's subagent
	// transcripts); "" means "sidecar".
	SidecarRole string
}

// Origin is what the session file itself says about where it was recorded.
type Origin struct {
	Cwd        string `json:"cwd"`
	CLIVersion string `json:"cli_version,omitempty"`
}

// plainID is ^[A-Za-z0-9_-]{1,128}$ by hand: as a regexp the bounded
// repetition compiles to 128 copies of the class, a third of a
// millisecond at every pvisor start.
func plainID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// BadIDError is an id that could reach outside the store or widen a glob.
type BadIDError struct{ ID string }

func (e *BadIDError) Error() string {
	return fmt.Sprintf("session id %q is not a plain id: use only letters, digits, '-' and '_' (at most 128), as the agent CLIs print them", e.ID)
}

// CheckID refuses ids with path separators, dots or glob metacharacters.
func CheckID(id string) error {
	if !plainID(id) {
		return &BadIDError{ID: id}
	}
	return nil
}

// NotFoundError is a session id absent from a store.
type NotFoundError struct {
	Agent, ID, Root, Pattern string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s session %s not found: no %s under %s (pass --home with the HOME the agent ran under)", e.Agent, e.ID, e.Pattern, e.Root)
}

// AmbiguousError is one id held by several session files.
type AmbiguousError struct {
	Agent, ID string
	Paths     []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%s session %s is ambiguous: %d files hold it (%s); remove the stale copy or pass --home to pick one store",
		e.Agent, e.ID, len(e.Paths), strings.Join(e.Paths, ", "))
}

// IsNotFound reports whether err says a session is missing or ambiguous.
func IsNotFound(err error) bool {
	var nf *NotFoundError
	var amb *AmbiguousError
	return errors.As(err, &nf) || errors.As(err, &amb)
}

// FindOne globs pattern (relative to root, with the id already checked by
// CheckID) and keeps the matches whose base name names exactly id, since a
// glob such as rollout-*-<id>.jsonl also matches a longer id ending in it.
// It returns the one match relative to root.
func FindOne(agent, root, id, pattern string, names func(base string) bool) (string, error) {
	if err := CheckID(id); err != nil {
		return "", err
	}
	matches, err := filepath.Glob(filepath.Join(root, pattern))
	if err != nil {
		return "", err
	}
	var found []string
	for _, m := range matches {
		if names(filepath.Base(m)) {
			found = append(found, m)
		}
	}
	sort.Strings(found)
	switch len(found) {
	case 0:
		if _, err := os.Stat(root); err != nil {
			return "", &NotFoundError{Agent: agent, ID: id, Root: root + " (which does not exist)", Pattern: pattern}
		}
		return "", &NotFoundError{Agent: agent, ID: id, Root: root, Pattern: pattern}
	case 1:
		return filepath.Rel(root, found[0])
	default:
		return "", &AmbiguousError{Agent: agent, ID: id, Paths: found}
	}
}

// NewV7 is a fresh time-ordered UUID (Codex's and Pi's ids).
func NewV7() string {
	u, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return u.String()
}

// RootFrom is the usual rule for a CLI's state directory: <home>/<sub> when
// home is given, else the environment override env, else $HOME/<sub>.
func RootFrom(home, sub, env string, getenv func(string) string) (string, error) {
	if home != "" {
		return filepath.Abs(filepath.Join(home, sub))
	}
	if v := getenv(env); v != "" {
		return filepath.Abs(v)
	}
	h := getenv("HOME")
	if h == "" {
		return "", fmt.Errorf("neither %s nor HOME is set: pass --home", env)
	}
	return filepath.Abs(filepath.Join(h, sub))
}
