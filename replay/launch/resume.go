package launch

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Resume is how one agent CLI resumes or forks a restored session against
// the bridge (pvisor resume and fork): its native flags, the configuration
// it needs to talk to the bridge, and where its output names the session it
// continued.
type Resume struct {
	// Command is the launch; it may write configuration files (listed in
	// the result, so the engine removes them after the run).
	Command func(c ResumeCall) (ResumeCommand, error)
	// SessionID reads the id of the session the CLI continued from its
	// captured stdout, the file at path stdout.
	SessionID func(stdout string) (string, error)
	// Text is the assistant text one line of the CLI's output carries.
	Text func(line []byte) string
	// Fork, for a CLI with a fork command of its own, is that command: run
	// before Command when the mode is fork, in the workspace with the
	// call's environment; its stdout (at most MaxForkOutput bytes) goes to
	// ForkID, which reads the new session's id from it. Command is then
	// called to resume that id (Fork false, SID and Main the child's).
	// nil: Command forks by itself (a flag, or a copy it makes).
	Fork   func(c ResumeCall) (Command, error)
	ForkID func(stdout []byte) (string, error)
	// For a CLI whose sessions live in a database (Agent.Database):
	// Collect exports session id after a run into the state directory
	// (c.Root) as the resumable store's file, and Export writes session id
	// of the database in dataDir (a copy pvisor made) into dataDir as that
	// store's file, where its Locate finds it; read reports that pvisor
	// read the rows itself rather than running the CLI's export. nil for
	// file-backed stores.
	Collect func(c ResumeCall, id string) error
	Export  func(c ResumeCall, dataDir, id string) (read bool, err error)
	// Stop and Grace end the CLI (SIGTERM and 3 s when zero).
	Stop  syscall.Signal
	Grace time.Duration
	// Compacted, for a CLI that summarises its history once the model's
	// token count passes a limit, reports whether a model request (its
	// body, as the bridge forwards it) carries such a summary in place of
	// the conversation. A resumed or forked agent that compacted no longer
	// sees the session it was given, so the run is marked degraded and says
	// so. nil: the CLI never compacts on its own.
	Compacted func(body []byte) bool
}

// MaxForkOutput bounds what a Fork command's stdout is read to.
const MaxForkOutput = 1 << 20

// ResumeCall is what a Resume is given.
type ResumeCall struct {
	Fork       bool   // fork (a new session id) rather than resume
	SID        string // the session to continue
	Home, Root string // the HOME and the agent's state directory in it
	Main       string // the restored main session file
	Prompt     string
	Bridge     BridgeAddr
	Args       []string // --agent-arg
	Backup     string   // where a config file already in Root goes first
	Entry      string   // the CLI, for its import and export
	Version    string   // the CLI's release, as probed
	Env        []string // the base environment
	Cwd        string   // the workspace
	StateRoot  string   // for OpenCode's template database
	// Meta is the run's metadata, for what a later step (Collect) reports.
	Meta map[string]any
}

// ResumeCommand is a Resume's launch.
type ResumeCommand struct {
	Command
	Meta map[string]any
	// Configs are the configuration files written for the bridge, to be
	// taken out again (and what they replaced put back) after the run.
	Configs []string
}

// WriteConfig writes a CLI's configuration file, moving one that is
// already there to backup first (a restore into a user's home).
func WriteConfig(path string, data []byte, backup string) error {
	if _, err := os.Lstat(path); err == nil {
		if err := os.MkdirAll(backup, 0o700); err != nil {
			return err
		}
		if err := os.Rename(path, filepath.Join(backup, filepath.Base(path))); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// RestoreConfigs removes the configuration files written for a run and
// puts back what WriteConfig moved to backup: a restore into a user's home
// leaves their configuration as it was.
func RestoreConfigs(paths []string, backup string) error {
	var errs []error
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
		kept := filepath.Join(backup, filepath.Base(p))
		if _, err := os.Lstat(kept); err == nil {
			errs = append(errs, os.Rename(kept, p))
		}
	}
	_ = os.Remove(backup) // only when empty: nothing left to recover
	return errors.Join(errs...)
}
