package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/pvisor/pvisor/replay/capture"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/run/userfile"
	"github.com/pvisor/pvisor/trajectory/agents"
	"github.com/pvisor/pvisor/trajectory/session"
)

const sessionUsage = `Usage:
    pvisor session locate --agent A [--home DIR] ID
    pvisor session show --agent A [--home DIR] [--json] ID
    pvisor session rewrite --agent A --from OLD --to NEW < IN > OUT

locate prints where the agent CLI keeps session ID (found by id, never by a
path built from a cwd), then the files that go with it. show adds the cwd
and CLI version the file records, its size and line count. The agent's
state directory is under --home when given, else where the CLI's own
environment variable puts it, else under $HOME.

rewrite copies a session file from stdin to stdout with the recorded cwd OLD
replaced by NEW in the agent's structural fields only. Every other byte,
message text and tool inputs included, is copied as read, and a torn last
line is kept, so OLD->NEW->OLD gives the original file.

Where each agent keeps its sessions, and what rewrite replaces:
{session-stores}

Agents: {session-agents}.

Exit status: 0 ok, 2 a bad flag or id (ids are letters, digits, '-' and
'_'), 10 no session, several with that id, or input that cannot be
rewritten, 11 an agent without session support.

Examples:
    # Where did Claude Code keep this session, and in which cwd did it run?
    $ pvisor session show --agent claude-code 0a1b2c3d-9f3e-4b6a-8c1d-2e3f4a5b6c7d

    # A Codex session from a sandbox's home.
    $ pvisor session locate --agent codex --home /sandbox/home 01a22998-569d-74b2-aebf-25f39bc1a17a

    # Move a Pi session from /home/agent/workspace to /w/repo.
    $ pvisor session rewrite --agent pi --from /home/agent/workspace --to /w/repo < in.jsonl > out.jsonl

Flags:
`

// sessionAgents are the agents every session command takes: the file
// stores, and those keeping their sessions in a database (OpenCode), whose
// database locate and show read and whose export documents rewrite moves.
func sessionAgents() []string { return agents.RewriterAgents() }

type sessionFlags struct {
	agent, home, from, to *string
	asJSON                *bool
}

func newSessionFlags(sub string) (*pflag.FlagSet, sessionFlags) {
	fs := pflag.NewFlagSet("session "+sub, pflag.ContinueOnError)
	return fs, sessionFlags{
		agent:  fs.String("agent", "", "agent whose session it is ("+joinAgents(sessionAgents())+")"),
		home:   fs.String("home", "", "HOME the agent ran under (locate, show)"),
		asJSON: fs.Bool("json", false, "print JSON (show)"),
		from:   fs.String("from", "", "recorded cwd to replace (rewrite)"),
		to:     fs.String("to", "", "cwd to write instead (rewrite)"),
	}
}

func cmdSession(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fs, _ := newSessionFlags("")
		if len(args) == 0 {
			printHelp(stderr, sessionUsage, fs)
			return 2
		}
		printHelp(stdout, sessionUsage, fs)
		return 0
	}
	sub := args[0]
	errf := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "pvisor session %s: %s\n", sub, fmt.Sprintf(format, a...))
		return code
	}
	fs, f := newSessionFlags(sub)
	agent, home, asJSON, from, to := f.agent, f.home, f.asJSON, f.from, f.to
	if err := parseFlags(fs, sessionUsage, args[1:], stdout); err != nil {
		if err == pflag.ErrHelp {
			return 0
		}
		return errf(2, "%v (see 'pvisor session --help')", err)
	}
	if sub == "rewrite" {
		return sessionRewrite(fs, *agent, *from, *to, stdout, stderr, errf)
	}
	if a, ok := inDatabase(*agent); ok && (sub == "locate" || sub == "show") {
		if fs.NArg() != 1 {
			return errf(2, "expected one session ID, got %d arguments", fs.NArg())
		}
		if fs.Changed("from") || fs.Changed("to") || (sub == "locate" && *asJSON) {
			return errf(2, "--from, --to (and --json for locate) belong to other session commands")
		}
		return sessionInDatabase(a, sub, *home, fs.Arg(0), *asJSON, stdout, errf)
	}
	store, code, err := sessionStore(*agent)
	if err != nil {
		return errf(code, "%v", err)
	}
	switch sub {
	case "locate", "show":
		if fs.NArg() != 1 {
			return errf(2, "expected one session ID, got %d arguments", fs.NArg())
		}
		if fs.Changed("from") || fs.Changed("to") || (sub == "locate" && *asJSON) {
			return errf(2, "--from, --to (and --json for locate) belong to other session commands")
		}
		loc, err := locate(store, *home, fs.Arg(0))
		if err != nil {
			return errf(sessionExit(err), "%v", err)
		}
		if sub == "locate" {
			for _, p := range append([]string{loc.Main}, loc.Sidecars...) {
				fmt.Fprintln(stdout, filepath.Join(loc.Root, p))
			}
			return 0
		}
		return showSession(stdout, stderr, store, loc, *asJSON)
	default:
		return errf(2, "unknown session command (want locate, show or rewrite)")
	}
}

// sessionRewrite is the pure rewriter, stdin to stdout.
func sessionRewrite(fs *pflag.FlagSet, agent, from, to string, stdout, stderr io.Writer, errf func(int, string, ...any) int) int {
	if fs.NArg() != 0 || fs.Changed("home") || fs.Changed("json") {
		return errf(2, "rewrite reads stdin and takes only --agent, --from and --to")
	}
	rw, ok := agents.Rewriter(agent)
	if _, known := agents.Lookup(agent); !ok && known {
		return errf(11, "%s session files cannot be rewritten yet (supported: %s)", agent, strings.Join(agents.RewriterAgents(), ", "))
	}
	if !ok {
		return errf(2, "unknown agent %q for rewrite (supported: %s)%s", agent, strings.Join(agents.RewriterAgents(), ", "), agentHint(agent))
	}
	if from == "" || to == "" {
		return errf(2, "--from and --to are both required")
	}
	n, err := rw.Rewrite(stdout, os.Stdin, from, to)
	if err != nil {
		return errf(10, "%v", err)
	}
	if n == 0 {
		fmt.Fprintf(stderr, "pvisor session rewrite: warning: no %s structural field holds exactly %q; the output equals the input\n", rw.Agent(), from)
	} else {
		fmt.Fprintf(stderr, "pvisor session rewrite: replaced %d values\n", n)
	}
	return 0
}

// sessionStore picks the agent's session store: an unknown name is a
// configuration error, a known agent without one is unsupported.
func sessionStore(agent string) (session.Store, int, error) {
	if agent == "" {
		return nil, 2, fmt.Errorf("--agent is required (%s)", strings.Join(agents.SessionAgents(), ", "))
	}
	if s, ok := agents.Sessions(agent); ok {
		return s, 0, nil
	}
	if _, ok := agents.Rewriter(agent); ok {
		return nil, 11, fmt.Errorf("%s keeps its sessions in a database, not in files: 'pvisor capture --agent %s --session ID' has its CLI export one into a bundle (or run `%s export ID`, which 'pvisor session rewrite' can move to another cwd); locate and show support %s", agent, agent, agent, strings.Join(agents.SessionAgents(), ", "))
	}
	if _, ok := agents.Lookup(agent); ok {
		return nil, 11, fmt.Errorf("%s sessions cannot be located or captured yet (supported: %s)", agent, strings.Join(sessionAgents(), ", "))
	}
	return nil, 2, fmt.Errorf("unknown agent %q (supported: %s)%s", agent, strings.Join(sessionAgents(), ", "), agentHint(agent))
}

func locate(store session.Store, home, id string) (*session.Located, error) {
	if err := session.CheckID(id); err != nil {
		return nil, err
	}
	root, err := store.Root(home, os.Getenv)
	if err != nil {
		return nil, &capture.Error{Category: result.ConfigurationError, Err: err}
	}
	return store.Locate(root, id)
}

// sessionExit is the exit code for a locate or capture error.
func sessionExit(err error) int {
	return result.ExitCode(&result.Failure{Category: capture.Category(err)})
}

type sessionInfo struct {
	Agent      string   `json:"agent"`
	SessionID  string   `json:"session_id"`
	Path       string   `json:"path"`
	OriginCwd  string   `json:"origin_cwd"`
	CLIVersion string   `json:"cli_version,omitempty"`
	Bytes      int64    `json:"bytes"`
	Lines      int      `json:"lines"`
	Sidecars   []string `json:"sidecars"`
}

func showSession(stdout, stderr io.Writer, store session.Store, loc *session.Located, asJSON bool) int {
	path := filepath.Join(loc.Root, loc.Main)
	f, _, err := userfile.Open(path, userfile.Policy{What: "session file"}) // a FIFO must not hang show
	if err != nil {
		fmt.Fprintf(stderr, "pvisor session show: %v\n", err)
		return 10
	}
	defer f.Close()
	lines := lineCounter{}
	origin, err := store.Origin(io.TeeReader(f, &lines))
	if err == nil {
		_, err = io.Copy(&lines, f) // Origin may stop early
	}
	if err != nil {
		fmt.Fprintf(stderr, "pvisor session show: %s: %v\n", path, err)
		return 10
	}
	info := sessionInfo{Agent: loc.Agent, SessionID: loc.ID, Path: path, OriginCwd: origin.Cwd,
		CLIVersion: origin.CLIVersion, Bytes: lines.bytes, Lines: lines.lines(), Sidecars: []string{}}
	for _, s := range loc.Sidecars {
		info.Sidecars = append(info.Sidecars, filepath.Join(loc.Root, s))
	}
	if asJSON {
		return printJSON(stdout, info)
	}
	fmt.Fprintf(stdout, "agent:       %s\nsession:     %s\npath:        %s\norigin cwd:  %s\ncli version: %s\nsize:        %d bytes, %d lines\n",
		info.Agent, info.SessionID, info.Path, info.OriginCwd, orNone(info.CLIVersion), info.Bytes, info.Lines)
	for _, s := range info.Sidecars {
		fmt.Fprintf(stdout, "sidecar:     %s\n", s)
	}
	return 0
}

// printJSON prints show's --json output: indented, HTML characters as
// they are; 50 when stdout fails.
func printJSON(stdout io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return 50
	}
	return 0
}

func orNone(s string) string {
	if s == "" {
		return "(not recorded)"
	}
	return s
}

// lineCounter counts bytes and lines of what passes through it.
type lineCounter struct {
	bytes    int64
	newlines int
	last     byte
}

func (c *lineCounter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' {
			c.newlines++
		}
	}
	if len(p) > 0 {
		c.last = p[len(p)-1]
	}
	c.bytes += int64(len(p))
	return len(p), nil
}

func (c *lineCounter) lines() int {
	if c.bytes > 0 && c.last != '\n' {
		return c.newlines + 1
	}
	return c.newlines
}
