package resume

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/agentproc"
	"github.com/pvisor/pvisor/replay/capture"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/prompt"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory/session"
)

// launchInput is a restored session ready to launch.
type launchInput struct {
	home, root, cwd, main string
	up                    bridge.Upstream
	upMeta                map[string]any
}

// attempt is one launch of the CLI: the first with the run's mode, a retry
// resumes the session the first one continued.
type attempt struct {
	n               int
	mode, sid, text string
}

// launch runs the CLI against the bridge and returns the session id it
// reported and the assistant text it printed.
func (r *sessionRun) launch(ctx context.Context, entry string, in launchInput, at attempt) (string, string, error) {
	logDir := filepath.Join(r.outputDir, "logs")
	agent := r.store.Agent()
	suffix := ".log"
	if at.n > 0 {
		suffix = fmt.Sprintf(".retry-%d.log", at.n)
	}
	stdoutLog, stderrLog := agent+"-stdout"+suffix, agent+"-stderr"+suffix
	logs := map[string]*os.File{}
	for _, name := range []string{"bridge" + suffix, stdoutLog, stderrLog} {
		f, err := agentproc.OpenLog(filepath.Join(logDir, name))
		if err != nil {
			return "", "", fail(result.WorkspaceError, "%v", err)
		}
		defer f.Close()
		logs[name] = f
	}
	activity := &atomic.Int64{}
	watch := &compactionWatch{compacted: r.spec.Compacted}
	srv, err := bridge.Start(bridge.Options{Upstream: replay.ActiveUpstream(in.up, activity), Conversation: watch,
		Logger: slog.New(slog.NewJSONHandler(logs["bridge"+suffix], nil))})
	if err != nil {
		return "", "", fail(result.ContinuationError, "%v", err)
	}
	defer srv.Close()
	tmp := filepath.Join(r.stateDir, "agent-tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return "", "", fail(result.WorkspaceError, "agent temp dir: %v", err)
	}
	backup := filepath.Join(in.root, capture.RecoveryDir, fmt.Sprintf("config-%s-%d", r.req.RunID, at.n))
	call := resumeCall{Fork: at.mode == ModeFork, SID: at.sid, Home: in.home, Root: in.root, Main: in.main,
		Prompt: at.text, Bridge: launch.BridgeAddr{URL: srv.URL(), Token: srv.Token()}, Args: r.req.AgentArgs,
		Backup: backup, Entry: entry, Env: r.baseEnv(), Cwd: in.cwd, StateRoot: filepath.Dir(r.stateDir), Meta: r.meta}
	if v := r.res.Agent.Version; v != nil {
		call.Version = *v
	}
	if call.Fork && r.spec.Fork != nil {
		if err := r.nativeFork(ctx, entry, in, &call, logDir); err != nil {
			return "", "", err
		}
	}
	cmd, err := r.spec.Command(call)
	if err != nil {
		return "", "", fail(result.ContinuationError, "configuring %s: %v", agent, err)
	}
	defer func() {
		if err := launch.RestoreConfigs(cmd.Configs, backup); err != nil {
			r.warn(fmt.Sprintf("putting back the configuration in %s: %v (the originals are in %s)", in.root, err, backup))
		}
	}()
	for k, v := range cmd.Meta {
		r.meta[k] = v
	}
	env := append(append(r.baseEnv(), "TMPDIR="+tmp, "BUN_TMPDIR="+tmp, "HOME="+in.home), cmd.Env...)
	idle := r.req.IdleTimeout
	if idle <= 0 {
		idle = replay.DefaultIdleTimeout
	}
	watcher, err := prompt.NewWatcher(r.req.Completion, nil)
	if err != nil {
		return "", "", configErr("%v", err)
	}
	tap := &textTap{text: r.spec.Text, watch: watcher}
	start := time.Now()
	proc, err := agentproc.Start(agentproc.Spec{Entry: entry, Args: cmd.Args, Env: env, Dir: in.cwd, Stdin: cmd.Stdin,
		Stdout: io.MultiWriter(logs[stdoutLog], tap), Stderr: logs[stderrLog]}, activity)
	if err != nil {
		return "", "", fail(result.ContinuationError, "starting %s: %v", entry, err)
	}
	r.res.AgentStatus = result.AgentFailed // until the run succeeds as a whole
	stop := proc.Supervise(ctx, agentproc.Watch{Refused: srv.Refused(), Idle: idle, Activity: activity, Completion: watcher,
		Signal: r.spec.Stop, Grace: r.spec.Grace})
	code, sig, waitErr := proc.Wait()
	srv.Close()
	watch.record(r)
	stats := srv.Stats()
	cont := map[string]any{"stop_reason": stop.String(), "exit_code": code, "duration_ms": time.Since(start).Milliseconds(),
		"bridge": stats, "upstream": in.upMeta}
	if sig != "" {
		cont["signal"] = sig
	}
	completion := map[string]any{"matched": watcher.Matched()}
	if stop == agentproc.StopCompleted {
		completion["warning"] = watcher.Warning()
		r.warn(watcher.Warning())
	}
	cont["completion"] = completion
	if at.n == 0 {
		r.res.Metadata["continuation"] = cont
	} else {
		cont["mode"] = at.mode
		r.retries = append(r.retries, cont)
	}
	bin := filepath.Base(entry)
	logHint := fmt.Sprintf("see %s/%s", logDir, stderrLog)
	switch {
	case stop == agentproc.StopCompleted:
		// The agent said it was done; the hang after it is not a failure.
	case stop == agentproc.StopIdle:
		return "", "", fail(result.ContinuationError, "%s showed no activity for %s and was stopped; %s", bin, idle, logHint)
	case stop == agentproc.StopCanceled:
		return "", "", fail(result.ContinuationError, "the run was interrupted while %s was running", bin)
	case waitErr != nil:
		return "", "", fail(result.InternalError, "waiting for %s: %v", bin, waitErr)
	case stats.Forwarded == 0 && stats.FirstUnauthorized != nil:
		return "", "", fail(result.ContinuationError, "%s", replay.TokenRefused(bin, stats, logHint))
	case code != 0 || sig != "":
		if lf := stats.LastFailure; lf != nil {
			return "", "", fail(result.ContinuationError, "%s; %s", replay.UpstreamFailed(bin, lf), logHint)
		}
		return "", "", fail(result.ContinuationError, "%s ended with status %d %s; %s", bin, code, sig, logHint)
	case stats.Forwarded == 0:
		return "", "", fail(result.ContinuationError, "%s", replay.NoAnswer(bin, stats, logHint))
	}
	id, err := r.spec.SessionID(filepath.Join(logDir, stdoutLog))
	if err != nil {
		return "", "", fail(result.ContinuationError, "%s: %v; %s", bin, err, logHint)
	}
	if err := session.CheckID(id); err != nil {
		return "", "", fail(result.ContinuationError, "%s reported session id %q: %v", bin, id, err)
	}
	if r.spec.Collect != nil {
		if err := r.spec.Collect(call, id); err != nil {
			return "", "", fail(result.ContinuationError, "the session after the run: %v", err)
		}
	}
	return id, tap.Text(), nil
}

func (r *sessionRun) warn(w string) {
	ws, _ := r.res.Metadata["warnings"].([]string)
	r.res.Metadata["warnings"] = append(ws, w)
}
