package replay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pvisor/pvisor/replay/prompt"
	toolrun "github.com/pvisor/pvisor/run"
)

// agentSpec is one agent CLI launch.
type agentSpec struct {
	entry  string
	args   []string
	env    []string
	dir    string
	stdin  []byte
	stdout io.Writer // the log files
	stderr io.Writer
}

// agentProc is a running agent CLI in its own process group. Its group is
// killed when it exits, so no helper it left behind outlives the run.
type agentProc struct {
	cmd      *exec.Cmd
	exited   chan struct{} // closed when the CLI itself has exited (not yet reaped)
	activity *atomic.Int64 // bumped on every byte of output
	status   *os.File      // the agent init's report, when the CLI runs under one
}

// activityWriter counts writes into activity; the idle watchdog reads it.
type activityWriter struct {
	w        io.Writer
	activity *atomic.Int64
}

func (a activityWriter) Write(p []byte) (int, error) {
	a.activity.Add(1)
	return a.w.Write(p)
}

// startAgent starts the CLI. It must run on the goroutine that owns the
// caller's namespaces (a test's loopback-only network namespace, say): the
// child inherits them from the thread that forks it.
func startAgent(spec agentSpec, activity *atomic.Int64) (*agentProc, error) {
	return startAgentIn(spec, activity, true)
}

// startAgentIn starts the CLI, under its own init when contain and this
// process may make the namespaces (agentinit_linux.go).
func startAgentIn(spec agentSpec, activity *atomic.Int64, contain bool) (*agentProc, error) {
	cmd := exec.Command(spec.entry, spec.args...)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	if spec.stdin != nil {
		cmd.Stdin = bytes.NewReader(spec.stdin)
	}
	cmd.Stdout = activityWriter{spec.stdout, activity}
	cmd.Stderr = activityWriter{spec.stderr, activity}
	// Pdeathsig: the CLI dies with pvisor, even when pvisor is SIGKILLed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Helpers that keep the output pipes open after the group is killed
	// cannot hold up the run.
	cmd.WaitDelay = 5 * time.Second
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	contained := contain && containAgent(cmd, statusW)
	err = cmd.Start()
	statusW.Close()
	if err != nil && contained {
		// No namespaces here after all (a container without
		// CAP_SYS_ADMIN): start the CLI in its process group alone.
		statusR.Close()
		return startAgentIn(spec, activity, false)
	}
	if err != nil || !contained {
		statusR.Close()
		statusR = nil
	}
	if err != nil {
		return nil, err
	}
	p := &agentProc{cmd: cmd, exited: make(chan struct{}), activity: activity, status: statusR}
	go func() {
		// Wait for the exit but leave the process unreaped: its pid is the
		// group id, and a zombie leader keeps that id from being reused
		// while the group is killed.
		var info unix.Siginfo
		for {
			if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != unix.EINTR {
				break
			}
		}
		close(p.exited)
	}()
	return p, nil
}

// agentLeftoverGrace is how long what the CLI left running gets between
// SIGTERM and SIGKILL when it exits.
const agentLeftoverGrace = 2 * time.Second

// stop asks the group to end with sig (SIGTERM when 0) and kills it after
// grace.
func (p *agentProc) stop(sig syscall.Signal, grace time.Duration) {
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.exited:
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// wait reaps the CLI after it exited and kills whatever is left of its group.
// It returns the exit code, or -1 with the signal that ended it.
func (p *agentProc) wait() (code int, sig string, err error) {
	<-p.exited
	if p.status == nil {
		// No init of its own (not root): what is left of the group gets
		// the SIGTERM the init would send (overlay.EndNamespace says why).
		endGroup(p.cmd.Process.Pid, agentLeftoverGrace)
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) // ESRCH when nothing is left
	err = p.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
		return -1, "", err
	}
	st := p.cmd.ProcessState
	if p.status != nil {
		// The init's exit is the CLI's, except for a CLI a signal ended.
		line, _ := bufio.NewReader(p.status).ReadString('\n')
		p.status.Close()
		if code, s, ok := readAgentStatus(line); ok {
			if s != 0 {
				return -1, s.String(), nil
			}
			return code, "", nil
		}
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal().String(), nil
	}
	return st.ExitCode(), "", nil
}

// why the engine stopped the agent, if it did.
type stopReason int

const (
	stopNone      stopReason = iota
	stopRefused              // the bridge refused a request
	stopBudget               // the step budget is spent
	stopIdle                 // nothing happened for too long
	stopCanceled             // pvisor itself was interrupted
	stopCompleted            // the agent said it was done and then hung
)

// watch is what supervise waits on besides the CLI.
type watch struct {
	refused <-chan struct{}
	budget  <-chan struct{}
	idle    time.Duration
	// activity is read together with the process's own output counter.
	activity *atomic.Int64
	// signal and grace stop the CLI (SIGTERM and 3 s when zero).
	signal syscall.Signal
	grace  time.Duration
	// completion, when set, follows the agent's completion signal: once
	// it is seen the idle timeout no longer applies, and a CLI still
	// running when the completion timeout passes is stopped as done.
	completion *prompt.Watcher
}

// supervise waits for the CLI to end and stops it when the bridge refused a
// request, the step budget is spent, nothing happened for w.idle, or ctx
// ends; the first cause wins.
func (p *agentProc) supervise(ctx context.Context, w watch) stopReason {
	tick := time.NewTicker(min(time.Second, w.idle/4+time.Millisecond))
	defer tick.Stop()
	last, lastAt := w.activity.Load(), time.Now()
	grace := w.grace
	if grace <= 0 {
		grace = 3 * time.Second
	}
	stop := func(r stopReason) stopReason {
		p.stop(w.signal, grace)
		return r
	}
	for {
		select {
		case <-p.exited:
			// A refusal or budget stop that raced with the exit still
			// explains it.
			select {
			case <-w.refused:
				return stopRefused
			case <-w.budget:
				return stopBudget
			default:
				return stopNone
			}
		case <-w.refused:
			return stop(stopRefused)
		case <-w.budget:
			return stop(stopBudget)
		case <-ctx.Done():
			return stop(stopCanceled)
		case <-tick.C:
			if w.completion != nil {
				switch w.completion.State() {
				case prompt.Done:
					return stop(stopCompleted)
				case prompt.Completing:
					continue
				}
			}
			if n := w.activity.Load(); n != last {
				last, lastAt = n, time.Now()
			} else if time.Since(lastAt) > w.idle {
				return stop(stopIdle)
			}
		}
	}
}

// openLog creates a log file in the run's logs dir.
func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("log %s: %w", path, err)
	}
	return f, nil
}

// endGroup sends SIGTERM to the group of the exited, unreaped leader and
// waits up to grace for its other members to go.
func endGroup(pgid int, grace time.Duration) {
	if !toolrun.GroupAlive(pgid) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	for deadline := time.Now().Add(grace); time.Now().Before(deadline) && toolrun.GroupAlive(pgid); {
		time.Sleep(10 * time.Millisecond)
	}
}
