package resume

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/agentcli"
	"github.com/pvisor/pvisor/replay/capture"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/toolenv"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/run/userfile"
)

// checkParent: a fork leaves the parent byte-identical (its bundle or its
// files in the source home, and the restored copy) under another id; a
// resume keeps the id.
func (r *sessionRun) checkParent(src *source, restored, restoredSum, childID string) error {
	after := map[string]string{}
	var err error
	switch {
	case src.trajectory != "":
		var s string
		s, err = fileSum(src.trajectory)
		after[filepath.Base(src.trajectory)] = s
	case src.bundle != "":
		after, err = capture.Hash(src.bundle)
	default:
		for rel := range src.hashes {
			var s string
			if s, err = fileSum(filepath.Join(src.located.Root, filepath.FromSlash(rel))); err != nil {
				break
			}
			after[rel] = s
		}
	}
	unchanged := err == nil && len(after) == len(src.hashes)
	for k, v := range src.hashes {
		unchanged = unchanged && after[k] == v
	}
	parent := map[string]any{"id": src.parentID, "sha256_before": src.hashes, "sha256_after": after, "unchanged": unchanged}
	r.meta["parent"] = parent
	if !unchanged {
		return fail(result.InternalError, "the parent session %s changed during the %s (see metadata.session.parent); this is a pvisor bug", src.parentID, r.req.Mode)
	}
	if src.childID != "" {
		if childID != src.childID {
			return fail(result.ContinuationError, "the CLI continued session %s, not the rebuilt child %s", childID, src.childID)
		}
		return nil
	}
	if r.req.Mode == ModeResume {
		if childID != src.parentID {
			return fail(result.ContinuationError, "the resumed session reports id %s, not %s: the CLI started a new conversation instead of resuming", childID, src.parentID)
		}
		return nil
	}
	now, err := fileSum(restored)
	parent["restored_copy_unchanged"] = err == nil && now == restoredSum
	if childID == src.parentID {
		return fail(result.ContinuationError, "the fork reports the parent's id %s: the CLI resumed instead of forking", childID)
	}
	if now != restoredSum {
		return fail(result.ContinuationError, "the CLI wrote to the parent session %s while forking it", restored)
	}
	return nil
}

func (r *sessionRun) makeDirs() error {
	stateRoot, outputRoot, err := replay.Roots(r.req.StateRoot, r.req.OutputRoot)
	if err != nil {
		return err
	}
	state, out := filepath.Join(stateRoot, r.req.RunID), filepath.Join(outputRoot, r.req.RunID)
	for _, d := range []string{state, out} {
		if exists(d) {
			return configErr("%s already exists; every run needs its own (choose a new --run-id)", d)
		}
	}
	for _, d := range []string{state, filepath.Join(out, "logs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fail(result.WorkspaceError, "%v", err)
		}
	}
	r.stateDir, r.outputDir = state, out
	r.res.StateDir, r.res.OutputDir = &state, &out
	return nil
}

// probe resolves the CLI and checks its version against the tested range.
func (r *sessionRun) probe(ctx context.Context) (string, error) {
	l := r.launcher()
	env := r.baseEnv()
	entry, source, err := agentcli.Entrypoint(r.req.AgentEntrypoint, l.Binary(), launch.EnvValue(env, "PATH"))
	if err != nil {
		return "", err
	}
	r.res.Agent.Entrypoint, r.res.Agent.LaunchSource = &entry, source
	cliPath, cliMeta, err := agentcli.CheckCLI(ctx, r.store.Agent(), entry, env)
	if cliMeta != nil {
		r.res.Metadata["agent_cli"] = cliMeta
	}
	if err != nil {
		return "", err
	}
	r.cliPath = cliPath
	env = r.baseEnv()
	probeEnv, err := agentcli.IsolatedHome(env, filepath.Join(r.stateDir, "version-probe"))
	if err != nil {
		return "", fail(result.WorkspaceError, "version probe home: %v", err)
	}
	version, printed, err := agentcli.ProbeVersion(ctx, entry, probeEnv)
	if err != nil {
		return "", fail(result.UnsupportedVersion, "%v; check --agent-entrypoint", err)
	}
	r.res.Agent.Version = &version
	check, degraded, err := agentcli.Verdict(l, r.store.Agent(), version, printed, r.req.AllowUntestedVersion)
	if check != nil {
		r.res.Metadata["agent_version_check"] = check
	}
	if err != nil {
		return "", err
	}
	if len(degraded) > 0 {
		r.res.Metadata["quality_reasons"] = degraded
	}
	return entry, nil
}

// baseEnv is the CLI's environment before its own additions.
func (r *sessionRun) baseEnv() []string { return agentcli.WithPathFirst(sessionBaseEnv(), r.cliPath) }

// sessionBaseEnv is a small fixed base of this process's environment,
// nothing that points at a model or a proxy.
func sessionBaseEnv() []string {
	var env []string
	for _, name := range []string{"PATH", "USER", "LANG", "LC_ALL", "TERM", "TZ", "SHELL"} {
		if v, ok := os.LookupEnv(name); ok && !toolenv.IsSecretValue(v) && !replay.RedirectsTraffic(name) {
			env = append(env, name+"="+v)
		}
	}
	return append(env, "NO_PROXY=127.0.0.1,localhost,::1", "no_proxy=127.0.0.1,localhost,::1")
}

// fileSum hashes a session file without ever blocking on it: a FIFO or a
// device is refused (capture refuses symlinks below the home itself).
func fileSum(path string) (string, error) {
	f, _, err := userfile.Open(path, userfile.Policy{What: "session file", FollowSymlinks: true})
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// PromptMetadata describes a prompt without its text.
func PromptMetadata(p string) map[string]any {
	h := sha256.Sum256([]byte(p))
	return map[string]any{"length": len(p), "sha256": hex.EncodeToString(h[:])}
}
