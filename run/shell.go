package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ShellRequest is one shell tool call.
type ShellRequest struct {
	// Command is a script for the shell (Options.Shell or Shell below).
	Command string
	// Argv runs a program directly, without a shell (Codex's old `shell`
	// tool passes an argv array). Exactly one of Command and Argv is set.
	Argv []string
	// Shell overrides Options.Shell for this call, e.g. {"bash", "-lc"}.
	Shell []string
	// Dir is the absolute working directory. Required for Runner.Shell; for
	// Session.Shell it overrides the carried-over directory for this call.
	Dir string
	// Env overrides Options.Env when non-nil.
	Env []string
	// Timeout kills the whole process group when it passes; 0 means none
	// (the context still applies).
	Timeout time.Duration
	// LogPath, when set, receives the full combined output (no cap).
	LogPath string
	// MaxOutput overrides Options.MaxOutput when non-zero.
	MaxOutput int
	// WaitForEOF makes the call last until stdout and stderr are closed, as
	// Python's subprocess.run/communicate does (mini-swe-agent, OpenHands):
	// a background process that keeps them open holds the call until it
	// exits or the timeout kills the group. Default: return when the shell
	// exits and leave background processes running.
	WaitForEOF bool
	// MergeStderr sends stderr into the stdout pipe (as 2>&1 would), so
	// Combined has the exact write order and Stderr stays empty. Without it
	// the two pipes are read concurrently: Combined is in arrival order,
	// which can swap writes made within microseconds of each other.
	MergeStderr bool
	// TTY runs the shell on a pseudo-terminal of Rows x Cols (default
	// 24x80), as agents that keep a terminal session do (OpenHands' tmux):
	// programs format for a terminal (ls in columns), output is one stream
	// (Stdout and Combined) with the terminal's \r\n line ends, and stdin
	// is the terminal, never at EOF.
	TTY        bool
	Rows, Cols uint16
	// KillBackground kills whatever is left in the group once the shell
	// exited, for agents whose shell tool does not let processes outlive a
	// call. Default: they keep running until Runner.Close.
	KillBackground bool
}

// ShellResult is what a shell call produced, raw.
type ShellResult struct {
	ExitCode int            // the shell's exit code; 128+N when killed by signal N
	Signal   syscall.Signal // non-zero when the shell was killed by a signal
	TimedOut bool           // Timeout passed and the group was killed
	Canceled bool           // the context ended and the group was killed
	Duration time.Duration  // from start to the shell's exit
	Stdout   Output
	Stderr   Output
	Combined Output // stdout and stderr interleaved in arrival order
	// Background is set when processes of the group outlived the shell;
	// they keep running (unless KillBackground) until Runner.Close.
	Background bool
	// Cwd is the working directory after the call: the shell's final
	// directory for a Session, else the directory the call ran in.
	Cwd    string
	Pid    int   // the shell's pid, which is also the process group id
	LogErr error // writing LogPath failed part-way; the output is still complete
}

// Truncated reports whether any stream lost bytes to the output cap.
func (r ShellResult) Truncated() bool {
	return r.Stdout.Truncated() || r.Stderr.Truncated() || r.Combined.Truncated()
}

// Shell runs one stateless command in req.Dir: nothing carries over to the
// next call (Codex exec_command/shell with an explicit workdir). A nil error
// means the command ran, whatever its exit code; a non-nil error means it
// could not start (the *Error says why) or the context was cancelled (the
// result is still filled in).
func (r *Runner) Shell(ctx context.Context, req ShellRequest) (ShellResult, error) {
	return r.shell(ctx, req, req.Dir, "", "")
}

func (r *Runner) shell(ctx context.Context, req ShellRequest, dir, cwdFile, exportFile string) (ShellResult, error) {
	if r.isClosed() {
		return ShellResult{}, newErr("shell", "", Closed, nil)
	}
	argv, err := r.argv("shell", req)
	if err != nil {
		return ShellResult{}, err
	}
	spec := r.spec("shell", req, argv, dir)
	if cwdFile != "" && len(req.Argv) == 0 {
		if err := withCwdTrap(&spec, cwdFile, cwdFile+".bash_env", exportFile); err != nil {
			return ShellResult{}, err
		}
	}
	p, err := startProc(spec)
	if err != nil {
		return ShellResult{}, err
	}
	if !r.track(p, false) {
		killGroup(p.pgid, 0)
	}
	timedOut, canceled := p.supervise(ctx, req.Timeout, r.opts.DrainGrace, r.opts.KillGrace, req.WaitForEOF)
	logErr := p.cap.detach()
	res := ShellResult{
		TimedOut: timedOut,
		Canceled: canceled,
		Duration: p.end.Sub(p.start),
		Cwd:      dir,
		Pid:      p.pgid,
		LogErr:   logErr,
	}
	res.ExitCode, res.Signal = p.exitStatus()
	res.Stdout, res.Stderr, res.Combined = p.cap.snapshot(false)
	if req.KillBackground && GroupAlive(p.pgid) {
		killGroup(p.pgid, r.opts.KillGrace)
		res.Background = true
	}
	if r.settle(p.pgid) {
		res.Background = true
	}
	if canceled {
		return res, ctx.Err()
	}
	return res, nil
}

func (r *Runner) spec(op string, req ShellRequest, argv []string, dir string) procSpec {
	env := r.opts.Env
	if req.Env != nil {
		env = req.Env
	}
	limit := r.opts.MaxOutput
	if req.MaxOutput != 0 {
		limit = req.MaxOutput
	}
	return procSpec{op: op, argv: argv, dir: dir, env: env, logPath: req.LogPath, maxOutput: limit, mergeStderr: req.MergeStderr, iso: r.opts.Isolation,
		tty: req.TTY, rows: req.Rows, cols: req.Cols}
}

// argv builds the process argv for req.
func (r *Runner) argv(op string, req ShellRequest) ([]string, error) {
	switch {
	case len(req.Argv) > 0 && req.Command != "":
		return nil, newErr(op, "", InvalidArgument, errors.New("set Command or Argv, not both"))
	case len(req.Argv) > 0:
		return req.Argv, nil
	case strings.TrimSpace(req.Command) == "":
		return nil, newErr(op, "", InvalidArgument, errors.New("empty command"))
	}
	sh := r.opts.Shell
	if len(req.Shell) > 0 {
		sh = req.Shell
	}
	return append(append([]string(nil), sh...), req.Command), nil
}

// withCwdTrap arranges for the shell to write its final directory to
// cwdFile through an EXIT trap. For bash the trap comes from a BASH_ENV file,
// so the agent's script is untouched: bash quotes the offending line in
// syntax errors, and a prefix would show up there. The file unsets BASH_ENV
// (or restores the caller's) so child bash processes do not inherit it.
// Other shells get the trap as a first script line, which shifts the line
// numbers in their error messages by one.
//
// With exportFile (bash only), the trap also saves the exported variables
// there and the next call's BASH_ENV file restores them first, so what one
// call exports the next one sees, as in one long-lived shell.
func withCwdTrap(spec *procSpec, cwdFile, envFile, exportFile string) error {
	save := "command pwd -P >| " + shQuote(cwdFile) + " 2>/dev/null"
	if exportFile != "" && filepath.Base(spec.argv[0]) == "bash" {
		save += "; export -p >| " + shQuote(exportFile) + " 2>/dev/null"
	}
	trap := "trap " + shQuote(save) + " EXIT"
	if filepath.Base(spec.argv[0]) != "bash" {
		last := len(spec.argv) - 1
		spec.argv = append(append([]string(nil), spec.argv[:last]...), trap+"\n"+spec.argv[last])
		return nil
	}
	var script strings.Builder
	env := make([]string, 0, len(spec.env)+1)
	orig := ""
	for _, kv := range spec.env {
		if v, ok := strings.CutPrefix(kv, "BASH_ENV="); ok {
			orig = v
			continue
		}
		env = append(env, kv)
	}
	if orig != "" {
		script.WriteString("BASH_ENV=" + shQuote(orig) + "; export BASH_ENV; . \"$BASH_ENV\"\n")
	} else {
		script.WriteString("unset BASH_ENV\n")
	}
	if exportFile != "" {
		script.WriteString("if [ -r " + shQuote(exportFile) + " ]; then . " + shQuote(exportFile) + "; fi\n")
	}
	script.WriteString(trap + "\n")
	if err := os.WriteFile(envFile, []byte(script.String()), 0o600); err != nil {
		return fsErr("shell", envFile, err)
	}
	spec.env = append(env, "BASH_ENV="+envFile)
	return nil
}

// shQuote quotes s for POSIX shells.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Session is a shell whose working directory carries over between calls,
// as Claude Code's Bash tool behaves: every call is a fresh shell process
// (variables and functions do not carry over), started in the directory the
// previous call ended in.
type Session struct {
	r       *Runner
	mu      sync.Mutex
	cwd     string
	cwdFile string
	// CarryExports makes exported variables carry over too (bash only), as
	// in an agent that keeps one shell alive (OpenHands' terminal). Set it
	// before the first call.
	CarryExports bool
}

// NewSession starts a persistent-cwd session in dir (absolute).
func (r *Runner) NewSession(dir string) (*Session, error) {
	if !filepath.IsAbs(dir) {
		return nil, newErr("shell", dir, NotAbsolute, nil)
	}
	r.mu.Lock()
	r.nextCwd++
	n := r.nextCwd
	r.mu.Unlock()
	return &Session{r: r, cwd: filepath.Clean(dir), cwdFile: filepath.Join(r.tmp, "cwd-"+strconv.Itoa(n))}, nil
}

// Cwd returns the directory the next call starts in.
func (s *Session) Cwd() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cwd
}

// SetCwd moves the session, e.g. to follow the cwd an agent recorded, or to
// reset it as Claude Code does when a command leaves the project.
func (s *Session) SetCwd(dir string) error {
	if !filepath.IsAbs(dir) {
		return newErr("shell", dir, NotAbsolute, nil)
	}
	s.mu.Lock()
	s.cwd = filepath.Clean(dir)
	s.mu.Unlock()
	return nil
}

// Shell runs req in the session's directory (or req.Dir when set) and then
// moves the session to the directory the shell ended in. Calls on one
// session are serialised, since each depends on where the previous ended.
// A command that never finishes normally (killed, exec'd away, or a shell
// that is not POSIX) leaves the directory unchanged.
func (s *Session) Shell(ctx context.Context, req ShellRequest) (ShellResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := s.cwd
	if req.Dir != "" {
		dir = req.Dir
	}
	if err := os.Remove(s.cwdFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return ShellResult{}, fsErr("shell", s.cwdFile, err)
	}
	// With Argv there is no script to trap; a program cannot change our cwd.
	exports := ""
	if s.CarryExports {
		exports = s.cwdFile + ".exports"
	}
	res, err := s.r.shell(ctx, req, dir, s.cwdFile, exports)
	if err != nil && res.Pid == 0 {
		return res, err
	}
	s.cwd = dir
	if b, rerr := os.ReadFile(s.cwdFile); rerr == nil {
		if d := strings.TrimSuffix(string(b), "\n"); filepath.IsAbs(d) {
			s.cwd = d
		}
	}
	res.Cwd = s.cwd
	return res, err
}
