package run

import (
	"context"
	"errors"
	"sort"
	"sync"
	"syscall"
	"time"
)

// ExecRequest starts a long-running exec session (Codex exec_command with
// yield_time_ms, Claude Code Bash run_in_background): the call returns after
// Yield, or as soon as the process exits, and the process keeps running,
// addressed by its session id, until it exits or the Runner is closed.
type ExecRequest struct {
	ShellRequest // Timeout here bounds the whole session's life, not the call
	// SessionID chooses the id (for example the one the original trajectory
	// used, so later native write_stdin calls address it unchanged); 0 picks
	// a fresh one.
	SessionID int
	TTY       bool   // run under a pseudo-terminal (Codex tty=true); output is one stream
	Rows      uint16 // TTY size; default 24x80
	Cols      uint16
	StdinPipe bool // without TTY: keep a stdin pipe open for WriteStdin (else /dev/null)
	// Yield is how long to collect output before returning while the
	// process still runs. UntilExit ignores Yield and waits for the exit
	// (bounded by ctx and Timeout).
	Yield     time.Duration
	UntilExit bool
}

// StdinRequest writes to an exec session and collects what it prints.
type StdinRequest struct {
	SessionID  int
	Data       []byte // may be empty: then the call only polls (Codex write_stdin with chars "")
	CloseStdin bool   // close the stdin pipe after writing (EOF for pipes; send "\x04" to a TTY instead)
	Yield      time.Duration
	UntilExit  bool
}

// ExecResult is the state of an exec session after a call.
type ExecResult struct {
	SessionID int
	Running   bool           // still running: more output may follow
	ExitCode  int            // when !Running; 128+N when killed by signal N
	Signal    syscall.Signal // when !Running and killed by a signal
	TimedOut  bool           // the session Timeout killed it
	// Output produced since the previous call on this session. With TTY
	// everything is in Stdout and Combined; Stderr stays empty.
	Stdout   Output
	Stderr   Output
	Combined Output
	Wall     time.Duration // time spent in this call (Codex "Wall time")
	Duration time.Duration // process lifetime, when it has exited
	Pid      int
	LogErr   error
}

// stdinWriteTimeout bounds a write to a session that does not read its
// input, when the context has no deadline.
const stdinWriteTimeout = 10 * time.Second

type execSession struct {
	id       int
	p        *proc
	hasStdin bool
	mu       sync.Mutex    // one call at a time per session
	done     chan struct{} // closed after exit and output collection
	timedOut bool
	cancel   context.CancelFunc
}

// Exec starts an exec session and waits up to Yield for it to finish.
// When the result says Running, address the session with WriteStdin.
func (r *Runner) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	start := time.Now()
	if r.isClosed() {
		return ExecResult{}, newErr("exec", "", Closed, nil)
	}
	argv, err := r.argv("exec", req.ShellRequest)
	if err != nil {
		return ExecResult{}, err
	}
	spec := r.spec("exec", req.ShellRequest, argv, req.Dir)
	spec.tty, spec.rows, spec.cols = req.TTY, req.Rows, req.Cols
	spec.stdinPipe = req.StdinPipe && !req.TTY

	r.mu.Lock()
	id := req.SessionID
	if id == 0 {
		for {
			if _, taken := r.sessions[r.nextID]; !taken {
				break
			}
			r.nextID++
		}
		id = r.nextID
		r.nextID++
	} else if _, taken := r.sessions[id]; taken {
		r.mu.Unlock()
		return ExecResult{}, &Error{Kind: SessionExists, Op: "exec", Index: -1, Count: id}
	}
	r.sessions[id] = nil // reserved while starting
	r.mu.Unlock()
	unreserve := func() {
		r.mu.Lock()
		delete(r.sessions, id)
		r.mu.Unlock()
	}

	p, err := startProc(spec)
	if err != nil {
		unreserve()
		return ExecResult{}, err
	}
	sctx, cancel := context.WithCancel(r.ctx)
	s := &execSession{id: id, p: p, hasStdin: p.stdin != nil, done: make(chan struct{}), cancel: cancel}
	if !r.track(p, true) {
		cancel()
		killGroup(p.pgid, 0)
		<-p.waited
		unreserve()
		return ExecResult{}, newErr("exec", "", Closed, nil)
	}
	r.mu.Lock()
	r.sessions[id] = s
	r.mu.Unlock()
	go func() {
		defer r.bg.Done()
		s.timedOut, _ = p.supervise(sctx, req.Timeout, r.opts.DrainGrace, r.opts.KillGrace, false)
		if p.stdin != nil {
			p.stdin.Close()
		}
		p.cap.detach()
		if sctx.Err() != nil {
			killGroup(p.pgid, 0) // Close or Kill: nothing of it may survive
		}
		r.settle(p.pgid)
		close(s.done)
	}()
	return r.collect(ctx, s, start, req.Yield, req.UntilExit)
}

// WriteStdin writes req.Data to the session and collects its output for
// req.Yield (or until it exits). A session whose exit has been reported is
// forgotten: later calls get Kind NoSession.
func (r *Runner) WriteStdin(ctx context.Context, req StdinRequest) (ExecResult, error) {
	start := time.Now()
	s, err := r.session("write_stdin", req.SessionID)
	if err != nil {
		return ExecResult{}, err
	}
	s.mu.Lock()
	locked := true
	defer func() {
		if locked {
			s.mu.Unlock()
		}
	}()
	if len(req.Data) > 0 || req.CloseStdin {
		if !s.hasStdin {
			return ExecResult{}, &Error{Kind: StdinClosed, Op: "write_stdin", Index: -1, Count: s.id}
		}
		if len(req.Data) > 0 {
			// A process that does not read must not hang the replay.
			deadline, ok := ctx.Deadline()
			if !ok {
				deadline = time.Now().Add(stdinWriteTimeout)
			}
			_ = s.p.stdin.SetWriteDeadline(deadline)
			// A process that already exited cannot read; its exit is reported below.
			if _, err := s.p.stdin.Write(req.Data); err != nil && !exitedOrClosed(s, err) {
				return ExecResult{}, newErr("write_stdin", "", KindOther, err)
			}
		}
		if req.CloseStdin {
			_ = s.p.stdin.Close()
			s.hasStdin = false
		}
	}
	locked = false
	s.mu.Unlock()
	return r.collect(ctx, s, start, req.Yield, req.UntilExit)
}

func exitedOrClosed(s *execSession, err error) bool {
	select {
	case <-s.p.waited:
		return true
	default:
	}
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.EIO)
}

// KillSession kills the session's process group and returns its final
// state (with any output not yet collected). The session is forgotten.
func (r *Runner) KillSession(ctx context.Context, id int) (ExecResult, error) {
	start := time.Now()
	s, err := r.session("kill", id)
	if err != nil {
		return ExecResult{}, err
	}
	s.cancel()
	return r.collect(ctx, s, start, 0, true)
}

// Sessions lists the ids of exec sessions whose exit was not yet reported.
func (r *Runner) Sessions() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]int, 0, len(r.sessions))
	for id, s := range r.sessions {
		if s != nil {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	return ids
}

func (r *Runner) session(op string, id int) (*execSession, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, newErr(op, "", Closed, nil)
	}
	s := r.sessions[id]
	if s == nil {
		return nil, &Error{Kind: NoSession, Op: op, Index: -1, Count: id}
	}
	return s, nil
}

// collect waits for exit, yield or ctx, then takes the output gathered since
// the previous collect.
func (r *Runner) collect(ctx context.Context, s *execSession, start time.Time, yield time.Duration, untilExit bool) (ExecResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var timer <-chan time.Time
	if !untilExit {
		t := time.NewTimer(yield)
		defer t.Stop()
		timer = t.C
	}
	var ctxErr error
	select {
	case <-s.done:
	case <-timer:
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}
	res := ExecResult{SessionID: s.id, Pid: s.p.pgid, Running: true}
	select {
	case <-s.done:
		res.Running = false
		res.TimedOut = s.timedOut
		res.ExitCode, res.Signal = s.p.exitStatus()
		res.Duration = s.p.end.Sub(s.p.start)
		res.LogErr = s.p.cap.logErr
		r.mu.Lock()
		if r.sessions[s.id] == s {
			delete(r.sessions, s.id)
		}
		r.mu.Unlock()
	default:
	}
	res.Stdout, res.Stderr, res.Combined = s.p.cap.snapshot(true)
	res.Wall = time.Since(start)
	return res, ctxErr
}
