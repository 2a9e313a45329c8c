package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/trajectory/agents"
	"github.com/pvisor/pvisor/trajectory/session"
)

// dbSession is what show prints about a session in an agent's database.
type dbSession struct {
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

// sessionInDatabase is locate and show for an agent whose sessions are
// rows of a database (launch.Agent's Database): the id is looked up as
// the session's key (never by its bytes, which another session may
// quote), from a snapshot when the database has a write-ahead log, so the
// home is only read.
func sessionInDatabase(a launch.Agent, sub, home, id string, asJSON bool, stdout io.Writer, errf func(int, string, ...any) int) int {
	if err := session.CheckID(id); err != nil {
		return errf(sessionExit(err), "%v", err)
	}
	root, err := a.Resumable.Root(home, os.Getenv)
	if err != nil {
		return errf(2, "%v", err)
	}
	db, err := a.Database.Open(root)
	if err != nil {
		return errf(10, "%v (is --home the HOME %s ran under?)", err, a.Name())
	}
	defer db.Close()
	s, ok, err := db.Find(id)
	if err != nil {
		return errf(10, "%v", err)
	}
	path := filepath.Join(root, a.Database.Files()[0])
	if !ok {
		return errf(10, "no %s session %s in %s", a.Name(), id, path)
	}
	if sub == "locate" {
		fmt.Fprintln(stdout, path)
		return 0
	}
	info := dbSession{Agent: a.Name(), SessionID: s.ID, Path: path, OriginCwd: s.Directory, CLIVersion: s.Version,
		Title: s.Title, Messages: s.Messages, Parts: s.Parts, Updated: s.Updated}
	if asJSON {
		return printJSON(stdout, info)
	}
	fmt.Fprintf(stdout, "agent:       %s\nsession:     %s\npath:        %s\norigin cwd:  %s\ncli version: %s\ntitle:       %s\nsize:        %d messages, %d parts\n",
		info.Agent, info.SessionID, info.Path, info.OriginCwd, orNone(info.CLIVersion), info.Title, info.Messages, info.Parts)
	return 0
}

// inDatabase is the agent called name when it keeps its sessions in a
// database.
func inDatabase(name string) (launch.Agent, bool) {
	a, ok := agents.Get(name)
	return a, ok && a.Database != nil && a.Resumable != nil
}
