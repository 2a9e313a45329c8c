package resume

import (
	"context"
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/agentcli"
	"github.com/pvisor/pvisor/replay/capture"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory/agents"
)

// ExportCapture is one pvisor capture of an agent whose sessions live in a
// database (OpenCode): they are not files to copy, so the CLI exports the
// session from a copy of the database, made in the state root, and the
// export document is what the bundle holds.
type ExportCapture struct {
	Agent           string
	SessionID       string
	Home            string // the HOME the agent ran under; "" is its own environment
	StoreDir        string // the bundle store
	AgentEntrypoint string // the CLI; "" finds it on PATH
	StateRoot       string // where the copy is made; "" is DefaultStateRoot
}

// Exported reports whether agent's sessions are captured through
// CaptureExported rather than copied as files.
func Exported(agent string) bool {
	spec, ok := resumeSpecOf(agent)
	_, ok2 := agents.Resumable(agent)
	return ok && ok2 && spec.Export != nil
}

// CaptureExported finds the session by id in the home's database (nothing
// is written when it is not there), copies the database into a temporary
// directory of the state root, exports the session from the copy with the
// CLI in an isolated home and stores the export as a bundle whose manifest
// names the CLI and its version. The home is only read.
func CaptureExported(ctx context.Context, req ExportCapture) (string, *capture.Manifest, error) {
	store, ok := agents.Resumable(req.Agent)
	spec, ok2 := resumeSpecOf(req.Agent)
	if !ok || !ok2 || spec.Export == nil {
		return "", nil, fail(result.UnsupportedAgent, "%s sessions are not captured by export", req.Agent)
	}
	root, err := store.Root(req.Home, os.Getenv)
	if err != nil {
		return "", nil, configErr("%v", err)
	}
	loc, err := locateInDatabase(store.Agent(), root, req.SessionID)
	if err != nil {
		return "", nil, err
	}
	env := sessionBaseEnv()
	l, _ := launcherOf(store.Agent())
	entry, _, err := agentcli.Entrypoint(req.AgentEntrypoint, l.Binary(), launch.EnvValue(env, "PATH"))
	if err != nil {
		return "", nil, err
	}
	stateRoot, _, err := replay.Roots(req.StateRoot, "")
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(stateRoot, 0o700); err != nil {
		return "", nil, fail(result.WorkspaceError, "%v", err)
	}
	work, err := os.MkdirTemp(stateRoot, "capture-")
	if err != nil {
		return "", nil, fail(result.WorkspaceError, "%v", err)
	}
	defer os.RemoveAll(work)
	probeEnv, err := agentcli.IsolatedHome(env, filepath.Join(work, "version-probe"))
	if err != nil {
		return "", nil, fail(result.WorkspaceError, "version probe home: %v", err)
	}
	version, _, _, err := agentcli.CachedVersion(ctx, stateRoot, entry, probeEnv)
	if err != nil {
		return "", nil, fail(result.UnsupportedVersion, "%v; check --agent-entrypoint", err)
	}
	home := filepath.Join(work, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", nil, fail(result.WorkspaceError, "%v", err)
	}
	c := resumeCall{Entry: entry, Env: env, Cwd: home}
	return exportBundle(store, spec, loc, c, home, req.StoreDir, &capture.Via{Method: "export", Tool: l.Binary(), Version: version})
}
