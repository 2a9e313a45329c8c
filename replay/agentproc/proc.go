// Package agentproc runs a real agent CLI for the engine: under an init of
// its own in new PID and mount namespaces (when root), in its own process
// group, with its output counted for the idle watchdog, and supervised
// until it exits or a cause to stop it (a refused request, a spent step
// budget, idleness, cancellation, a completed agent) comes first. What is
// left when it exits gets SIGTERM before SIGKILL.
package agentproc

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

// Spec is one agent CLI launch.
type Spec struct {
	Entry  string
	Args   []string
	Env    []string
	Dir    string
	Stdin  []byte
	Stdout io.Writer // the log files
	Stderr io.Writer
}

// Proc is a running agent CLI in its own process group. Its group is
// killed when it exits, so no helper it left behind outlives the run.
type Proc struct {
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

// Start starts the CLI. It must run on the goroutine that owns the
// caller's namespaces (a test's loopback-only network namespace, say): the
// child inherits them from the thread that forks it.
func Start(spec Spec, activity *atomic.Int64) (*Proc, error) {
	return startIn(spec, activity, true)
}

// startIn starts the CLI, under its own init when contain and this
// process may make the namespaces (agentinit_linux.go).
func startIn(spec Spec, activity *atomic.Int64, contain bool) (*Proc, error) {
	cmd := exec.Command(spec.Entry, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	if spec.Stdin != nil {
		cmd.Stdin = bytes.NewReader(spec.Stdin)
	}
	cmd.Stdout = activityWriter{spec.Stdout, activity}
	cmd.Stderr = activityWriter{spec.Stderr, activity}
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
		return startIn(spec, activity, false)
	}
	if err != nil || !contained {
		statusR.Close()
		statusR = nil
	}
	if err != nil {
		return nil, err
	}
	p := &Proc{cmd: cmd, exited: make(chan struct{}), activity: activity, status: statusR}
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

// Stop asks the group to end with sig (SIGTERM when 0) and kills it after
// grace.
func (p *Proc) Stop(sig syscall.Signal, grace time.Duration) {
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

// Wait reaps the CLI after it exited and kills whatever is left of its group.
// It returns the exit code, or -1 with the signal that ended it.
func (p *Proc) Wait() (code int, sig string, err error) {
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

// StopReason is why the engine stopped the agent, if it did.
type StopReason int

const (
	StopNone      StopReason = iota
	StopRefused              // the bridge refused a request
	StopBudget               // the step budget is spent
	StopIdle                 // nothing happened for too long
	StopCanceled             // pvisor itself was interrupted
	StopCompleted            // the agent said it was done and then hung
)

// Watch is what supervise waits on besides the CLI.
type Watch struct {
	Refused <-chan struct{}
	Budget  <-chan struct{}
	Idle    time.Duration
	// Activity is read together with the process's own output counter.
	Activity *atomic.Int64
	// Signal and Grace stop the CLI (SIGTERM and 3 s when zero).
	Signal syscall.Signal
	Grace  time.Duration
	// Completion, when set, follows the agent's completion signal: once
	// it is seen the idle timeout no longer applies, and a CLI still
	// running when the completion timeout passes is stopped as done.
	Completion *prompt.Watcher
}

// Supervise waits for the CLI to end and stops it when the bridge refused a
// request, the step budget is spent, nothing happened for w.Idle, or ctx
// ends; the first cause wins.
func (p *Proc) Supervise(ctx context.Context, w Watch) StopReason {
	tick := time.NewTicker(min(time.Second, w.Idle/4+time.Millisecond))
	defer tick.Stop()
	last, lastAt := w.Activity.Load(), time.Now()
	grace := w.Grace
	if grace <= 0 {
		grace = 3 * time.Second
	}
	stop := func(r StopReason) StopReason {
		p.Stop(w.Signal, grace)
		return r
	}
	for {
		select {
		case <-p.exited:
			// A refusal or budget stop that raced with the exit still
			// explains it.
			select {
			case <-w.Refused:
				return StopRefused
			case <-w.Budget:
				return StopBudget
			default:
				return StopNone
			}
		case <-w.Refused:
			return stop(StopRefused)
		case <-w.Budget:
			return stop(StopBudget)
		case <-ctx.Done():
			return stop(StopCanceled)
		case <-tick.C:
			if w.Completion != nil {
				switch w.Completion.State() {
				case prompt.Done:
					return stop(StopCompleted)
				case prompt.Completing:
					continue
				}
			}
			if n := w.Activity.Load(); n != last {
				last, lastAt = n, time.Now()
			} else if time.Since(lastAt) > w.Idle {
				return stop(StopIdle)
			}
		}
	}
}

// OpenLog creates a log file in the run's logs dir.
func OpenLog(path string) (*os.File, error) {
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

func (s StopReason) String() string {
	switch s {
	case StopRefused:
		return "refused"
	case StopBudget:
		return "max_steps"
	case StopIdle:
		return "idle"
	case StopCanceled:
		return "canceled"
	case StopCompleted:
		return "completed"
	}
	return "exited"
}
