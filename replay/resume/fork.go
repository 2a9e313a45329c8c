package resume

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/agentproc"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory/session"
)

// nativeFork runs the CLI's own fork command (Resume.Fork) before a fork's
// first launch and turns call into a resume of the child it made. The
// command talks to no model, so no bridge runs; the parent's check after
// the run (checkParent) covers what the command may have written.
func (r *sessionRun) nativeFork(ctx context.Context, entry string, in launchInput, call *resumeCall, logDir string) error {
	agent := r.store.Agent()
	cmd, err := r.spec.Fork(*call)
	if err != nil {
		return fail(result.ContinuationError, "configuring the %s fork: %v", agent, err)
	}
	stdoutPath := filepath.Join(logDir, agent+"-fork-stdout.log")
	stderrName := agent + "-fork-stderr.log"
	var logs [2]*os.File
	for i, p := range []string{stdoutPath, filepath.Join(logDir, stderrName)} {
		f, err := agentproc.OpenLog(p)
		if err != nil {
			return fail(result.WorkspaceError, "%v", err)
		}
		defer f.Close()
		logs[i] = f
	}
	idle := r.req.IdleTimeout
	if idle <= 0 {
		idle = replay.DefaultIdleTimeout
	}
	env := append(append(append([]string{}, call.Env...), "HOME="+in.home, "TMPDIR="+filepath.Join(r.stateDir, "agent-tmp")), cmd.Env...)
	activity := &atomic.Int64{}
	proc, err := agentproc.Start(agentproc.Spec{Entry: entry, Args: cmd.Args, Env: env, Dir: in.cwd, Stdin: cmd.Stdin,
		Stdout: logs[0], Stderr: logs[1]}, activity)
	if err != nil {
		return fail(result.ContinuationError, "starting %s: %v", entry, err)
	}
	stop := proc.Supervise(ctx, agentproc.Watch{Idle: idle, Activity: activity, Signal: r.spec.Stop, Grace: r.spec.Grace})
	code, sig, waitErr := proc.Wait()
	hint := fmt.Sprintf("see %s/%s", logDir, stderrName)
	bin := filepath.Base(entry)
	switch {
	case stop == agentproc.StopIdle:
		return fail(result.ContinuationError, "%s's fork showed no activity for %s and was stopped; %s", bin, idle, hint)
	case stop == agentproc.StopCanceled:
		return fail(result.ContinuationError, "the run was interrupted while %s was forking the session", bin)
	case waitErr != nil:
		return fail(result.InternalError, "waiting for %s: %v", bin, waitErr)
	case code != 0 || sig != "":
		return fail(result.ContinuationError, "%s's fork of session %s ended with status %d %s; %s", bin, call.SID, code, sig, hint)
	}
	f, err := os.Open(stdoutPath)
	if err != nil {
		return fail(result.WorkspaceError, "%v", err)
	}
	out, err := io.ReadAll(io.LimitReader(f, launch.MaxForkOutput))
	f.Close()
	if err != nil {
		return fail(result.WorkspaceError, "%v", err)
	}
	child, err := r.spec.ForkID(out)
	if err != nil {
		return fail(result.ContinuationError, "%s's fork: %v; see %s", bin, err, stdoutPath)
	}
	if err := session.CheckID(child); err != nil {
		return fail(result.ContinuationError, "%s's fork reported session id %q: %v", bin, child, err)
	}
	if child == call.SID {
		return fail(result.ContinuationError, "%s's fork reported the parent's id %s, not a new session", bin, child)
	}
	loc, err := r.store.Locate(in.root, child)
	if err != nil {
		return fail(result.ContinuationError, "the session %s's fork made: %v", bin, err)
	}
	r.meta["fork_method"] = "native"
	r.meta["fork_command"] = append([]string{bin}, cmd.Args...)
	r.meta["fork_child"] = child
	call.Fork, call.SID, call.Main = false, child, filepath.Join(in.root, loc.Main)
	return nil
}
