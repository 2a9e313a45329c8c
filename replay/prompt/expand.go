package prompt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	toolrun "github.com/pvisor/pvisor/run"
)

// Executor runs one !`command` in a directory.
type Executor interface {
	Run(ctx context.Context, command, dir string) (ExecResult, error)
}

// ExecResult is what an expansion command did. A non-nil error from
// Executor.Run means it could not run at all.
type ExecResult struct {
	Stdout   []byte
	Stderr   []byte // may be only the tail
	ExitCode int
	TimedOut bool
	// Truncated says Stdout lost bytes to the output cap: the prompt
	// would be missing part of it.
	Truncated bool
	Duration  time.Duration
}

// ExecOptions configure the default executor.
type ExecOptions struct {
	// Env is the commands' whole environment (nil: empty): give them what
	// replayed tools get, never pvisor's own.
	Env []string
	// Isolation is that of replayed tools (PID and mount namespaces,
	// no_new_privs, dropped capabilities, data limit).
	Isolation toolrun.Isolation
	// Timeout bounds each command; default DefaultExecTimeout.
	Timeout time.Duration
	// MaxOutput caps each command's stdout (and the kept stderr); default
	// DefaultMaxOutput. A command printing more fails the prompt.
	MaxOutput int
	// TempDir holds the runner's side files; default os.TempDir().
	TempDir string
}

// Defaults of ExecOptions.
const (
	DefaultExecTimeout = 60 * time.Second
	DefaultMaxOutput   = 256 << 10
)

// stderrTail is how much of a failing command's stderr a message quotes.
const stderrTail = 600

// RunExecutor runs expansion commands with bash -c through run.Runner,
// exactly as replayed shell tools run: own process group (killed with
// whatever it left behind), stdin /dev/null, capped output, a timeout.
type RunExecutor struct {
	opts   ExecOptions
	runner *toolrun.Runner
}

// NewExecutor starts the default executor; Close it when done.
func NewExecutor(opts ExecOptions) (*RunExecutor, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultExecTimeout
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = DefaultMaxOutput
	}
	env := opts.Env
	if env == nil {
		env = []string{}
	}
	r, err := toolrun.NewRunner(toolrun.Options{Env: env, MaxOutput: opts.MaxOutput, Isolation: opts.Isolation, TempDir: opts.TempDir})
	if err != nil {
		return nil, err
	}
	return &RunExecutor{opts: opts, runner: r}, nil
}

// Close kills anything an expansion left running.
func (e *RunExecutor) Close() error { return e.runner.Close() }

func (e *RunExecutor) Run(ctx context.Context, command, dir string) (ExecResult, error) {
	res, err := e.runner.Shell(ctx, toolrun.ShellRequest{Command: command, Dir: dir, Timeout: e.opts.Timeout, KillBackground: true})
	out := ExecResult{
		Stdout: res.Stdout.Data, Stderr: res.Stderr.Data, ExitCode: res.ExitCode, TimedOut: res.TimedOut,
		Truncated: res.Stdout.Truncated(), Duration: res.Duration,
	}
	return out, err
}

// ExpansionError is a !`command` that failed: it could not run, exited
// non-zero, timed out or printed too much.
type ExpansionError struct {
	File, Command string
	Line          int
	ExitCode      int
	Reason        string // what went wrong, with the stderr tail
}

func (e *ExpansionError) Error() string {
	return fmt.Sprintf("%s:%d: !`%s` %s", e.File, e.Line, e.Command, e.Reason)
}

// Expand runs every !`command` at once in workspace and puts what each
// printed (trailing newlines removed, as $(…) does) in its place. Any
// failure fails the whole prompt: the agent must not start on a prompt
// with a hole in it.
func (t *Template) Expand(ctx context.Context, workspace string, exec Executor) (Resolved, error) {
	res := Resolved{Warnings: t.Warnings()}
	type job struct {
		seg *segment
		out ExecResult
		err error
	}
	var jobs []*job
	for i := range t.segs {
		if t.segs[i].command {
			jobs = append(jobs, &job{seg: &t.segs[i]})
		}
	}
	if len(jobs) > 0 && exec == nil {
		return res, fmt.Errorf("%s: !`command` expressions need an executor", t.name)
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.out, j.err = exec.Run(ctx, j.seg.text, workspace)
		}()
	}
	wg.Wait()
	outputs := map[*segment]string{}
	var errs []error
	for _, j := range jobs {
		res.Expansions = append(res.Expansions, Expansion{Command: j.seg.text, Line: j.seg.line, ExitCode: j.out.ExitCode,
			Duration: j.out.Duration, DurationMS: j.out.Duration.Milliseconds()})
		e := &ExpansionError{File: t.name, Command: j.seg.text, Line: j.seg.line, ExitCode: j.out.ExitCode}
		switch {
		case j.err != nil:
			e.Reason = fmt.Sprintf("could not run: %v", j.err)
		case j.out.TimedOut:
			e.Reason = "timed out" + tail(j.out.Stderr)
		case j.out.ExitCode != 0:
			e.Reason = fmt.Sprintf("exited %d%s", j.out.ExitCode, tail(j.out.Stderr))
		case j.out.Truncated:
			e.Reason = "printed more than the output cap; print less (e.g. pipe through head)"
		default:
			outputs[j.seg] = strings.TrimRight(string(j.out.Stdout), "\n")
			continue
		}
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		return res, errors.Join(errs...)
	}
	var b strings.Builder
	for i := range t.segs {
		s := &t.segs[i]
		if s.command {
			b.WriteString(outputs[s])
		} else {
			b.WriteString(s.text)
		}
		if b.Len() > MaxTextBytes {
			return res, fmt.Errorf("%s: the expanded prompt is over %d bytes: make the commands print less", t.name, MaxTextBytes)
		}
	}
	res.Text = b.String()
	if strings.TrimSpace(res.Text) == "" {
		return res, fmt.Errorf("%s: the prompt is empty after expansion: it must contain a non-whitespace character", t.name)
	}
	return res, nil
}

// tail quotes the end of a command's stderr for a message.
func tail(stderr []byte) string {
	s := strings.TrimSpace(string(stderr))
	if s == "" {
		return " (no stderr)"
	}
	if len(s) > stderrTail {
		s = "…" + strings.ToValidUTF8(s[len(s)-stderrTail:], "")
	}
	return ": " + s
}
