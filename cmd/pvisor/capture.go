package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/capture"
	"github.com/pvisor/pvisor/replay/resume"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory/agents"
	"github.com/pvisor/pvisor/trajectory/session"
)

// captureUsage is capture's help; the agents it names come from the
// registry.
func captureUsage() string {
	return strings.NewReplacer("{byExport}", joinAgents(exportedAgents()), "{agents}", joinAgents(captureAgents())).Replace(captureHelp)
}

const captureHelp = `Usage: pvisor capture --agent A --session ID [--home DIR] [--store DIR]

Finds session ID in the agent's state directory by its id (as 'pvisor
session locate' does) and stores a portable bundle at <store>/<agent>/<ID>/:
manifest.json (agent, session id, the cwd and CLI version the session
records, size and SHA-256 per file, creation time) and files/, the original
bytes unmodified under their path in the state directory (with the
session's sidecar files, such as Claude Code's subagent transcripts). A
restore rewrites the recorded cwd; the bundle never does. Symlinks are
refused, and so are files over 64 MiB and sessions of more than 4096 files. The bundle is
written to a temporary directory in the store and renamed into place, so a
capture of the same session again replaces the old bundle whole. The store
must be new, empty, or a store pvisor made (it holds pvisor-store.json).

Agents whose CLI keeps its sessions in a database ({byExport}) are
captured by export: the database files are copied from the home into a
temporary directory of the state root (--state-dir) and pvisor reads the
session's rows from the copy, writing the document the CLI's export
prints; a database of another schema is exported by the real CLI
(--agent-entrypoint) from the copy, in an isolated home with updates,
sharing and model downloads off. The home is only read. The bundle holds
the export document (pvisor-exports/<ID>.json), which 'pvisor resume
--bundle' imports, and the manifest's via names the method (database-read
or export), the CLI and its version.

Prints one JSON line: {"bundle", "manifest", "failure"}. Exit status: 0 ok,
2 a bad flag, id, store or CLI path, 10 no session, several, or one that
cannot be captured (or exported), 11 an agent without session support or
a CLI that does not print its version, 20 the store cannot be written.

Agents: {agents}.

Examples:
    # Capture a Claude Code session from a sandbox's home into ./bundles.
    $ pvisor capture --agent claude-code --session 0a1b2c3d-9f3e-4b6a-8c1d-2e3f4a5b6c7d \
        --home /sandbox/home --store ./bundles

    # The manifest says where it ran and what each file hashes to.
    $ jq . ./bundles/claude-code/0a1b2c3d-9f3e-4b6a-8c1d-2e3f4a5b6c7d/manifest.json

Flags:
`

type captureLine struct {
	Bundle   *string           `json:"bundle"`
	Manifest *capture.Manifest `json:"manifest"`
	Failure  *result.Failure   `json:"failure"`
}

func cmdCapture(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("capture", pflag.ContinueOnError)
	agent := fs.String("agent", "", "agent whose session it is ("+joinAgents(captureAgents())+")")
	id := fs.String("session", "", "session id, as the agent CLI printed it")
	home := fs.String("home", "", "HOME the agent ran under (default: the agent's own environment, then $HOME)")
	byExport := joinAgents(exportedAgents())
	entry := fs.String("agent-entrypoint", "", "the CLI that exports the session, for agents captured by export ("+byExport+"; default: on PATH)")
	stateDir := fs.String("state-dir", replay.DefaultStateRoot, "state root, where the database is copied to export from ("+byExport+")")
	storeDir := fs.String("store", "", "bundle store (default: $XDG_DATA_HOME/pvisor/sessions or ~/.local/share/pvisor/sessions)")
	fail := func(category, format string, a ...any) int {
		f := &result.Failure{Category: category, Message: fmt.Sprintf(format, a...)}
		fmt.Fprintf(stderr, "pvisor capture: %s\n", f.Message)
		printCaptureLine(stdout, captureLine{Failure: f})
		return result.ExitCode(f)
	}
	if err := parseFlags(fs, captureUsage(), args, stdout); err != nil {
		if err == pflag.ErrHelp {
			return 0
		}
		return fail(result.ConfigurationError, "%v", err)
	}
	if fs.NArg() != 0 {
		return fail(result.ConfigurationError, "unexpected arguments %q (the session id goes in --session)", fs.Args())
	}
	if *id == "" {
		return fail(result.ConfigurationError, "--session is required")
	}
	exported := resume.Exported(*agent)
	if !exported && (fs.Changed("agent-entrypoint") || fs.Changed("state-dir")) {
		return fail(result.ConfigurationError, "--agent-entrypoint and --state-dir are for agents captured by export (%s); %s sessions are copied as files", byExport, *agent)
	}
	var store session.Store
	if !exported {
		s, code, err := sessionStore(*agent)
		if err != nil {
			category := result.ConfigurationError
			if code == 11 {
				category = result.UnsupportedAgent
			}
			return fail(category, "%v", err)
		}
		store = s
	}
	var err error
	if *storeDir == "" {
		if *storeDir, err = defaultStore(); err != nil {
			return fail(result.ConfigurationError, "%v", err)
		}
	}
	if *storeDir, err = filepath.Abs(*storeDir); err != nil {
		return fail(result.ConfigurationError, "--store: %v", err)
	}
	var dir string
	var m *capture.Manifest
	if exported {
		dir, m, err = resume.CaptureExported(context.Background(), resume.ExportCapture{Agent: *agent, SessionID: *id, Home: *home,
			StoreDir: *storeDir, AgentEntrypoint: *entry, StateRoot: *stateDir})
	} else {
		root, rerr := store.Root(*home, os.Getenv)
		if rerr != nil {
			return fail(result.ConfigurationError, "%v", rerr)
		}
		dir, m, err = capture.Capture(capture.Options{Store: store, Root: root, ID: *id, StoreDir: *storeDir})
	}
	if err != nil {
		return fail(resume.Category(err), "%v", err)
	}
	printCaptureLine(stdout, captureLine{Bundle: &dir, Manifest: m})
	return 0
}

// captureAgents are the agents capture takes: those with a session store,
// and those captured by export.
func captureAgents() []string {
	var out []string
	for _, a := range agents.Names() {
		if _, ok := agents.Sessions(a); ok || resume.Exported(a) {
			out = append(out, a)
		}
	}
	return out
}

// exportedAgents are the agents whose sessions live in a database, which
// capture exports rather than copies.
func exportedAgents() []string {
	var out []string
	for _, a := range agents.Names() {
		if resume.Exported(a) {
			out = append(out, a)
		}
	}
	return out
}

func printCaptureLine(w io.Writer, l captureLine) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(l)
}

func defaultStore() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "pvisor", "sessions"), nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no --store and no home directory: %v", err)
	}
	return filepath.Join(h, ".local", "share", "pvisor", "sessions"), nil
}
