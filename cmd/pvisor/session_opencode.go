package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/agents"
	"github.com/pvisor/pvisor/trajectory/opencode"
	"github.com/pvisor/pvisor/trajectory/opencode/store"
	"github.com/pvisor/pvisor/trajectory/session"
)

// openCodeSession is what show prints about a session in OpenCode's
// database.
type openCodeSession struct {
	Agent      string `json:"agent"`
	SessionID  string `json:"session_id"`
	Path       string `json:"path"`
	OriginCwd  string `json:"origin_cwd"`
	CLIVersion string `json:"cli_version,omitempty"`
	Title      string `json:"title"`
	Messages   int    `json:"messages"`
	Parts      int    `json:"parts"`
	Updated    int64  `json:"time_updated_ms"`
}

// sessionOpenCode is locate and show for OpenCode, whose sessions are rows
// of its SQLite database: the id is looked up as the session table's
// primary key (never by its bytes, which another session may quote), from
// a snapshot when the database has a write-ahead log, so the home is only
// read.
func sessionOpenCode(sub, home, id string, asJSON bool, stdout io.Writer, errf func(int, string, ...any) int) int {
	if err := session.CheckID(id); err != nil {
		return errf(sessionExit(err), "%v", err)
	}
	root, err := opencode.Bundled().Root(home, os.Getenv)
	if err != nil {
		return errf(2, "%v", err)
	}
	db, done, err := store.OpenSnapshot(root, "")
	if err != nil {
		return errf(10, "%v (is --home the HOME opencode ran under?)", err)
	}
	defer done()
	defer db.Close()
	s, ok, err := db.Find(id)
	if err != nil {
		return errf(10, "%v", err)
	}
	path := filepath.Join(root, opencode.DatabaseFiles[0])
	if !ok {
		return errf(10, "no opencode session %s in %s", id, path)
	}
	if sub == "locate" {
		fmt.Fprintln(stdout, path)
		return 0
	}
	info := openCodeSession{Agent: "opencode", SessionID: s.ID, Path: path, OriginCwd: s.Directory, CLIVersion: s.Version,
		Title: s.Title, Messages: s.Messages, Parts: s.Parts, Updated: s.TimeUpdated}
	if asJSON {
		return printJSON(stdout, info)
	}
	fmt.Fprintf(stdout, "agent:       %s\nsession:     %s\npath:        %s\norigin cwd:  %s\ncli version: %s\ntitle:       %s\nsize:        %d messages, %d parts\n",
		info.Agent, info.SessionID, info.Path, info.OriginCwd, orNone(info.CLIVersion), info.Title, info.Messages, info.Parts)
	return 0
}

func isOpenCode(agent string) bool {
	f, ok := agents.Lookup(agent)
	return ok && f.Agent() == trajectory.OpenCode
}
