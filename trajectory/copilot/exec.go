package copilot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

// The replay runs Copilot CLI's built-in tools as 1.0.102 does (measured on
// its recordings): bash commands run one after another in one shell whose
// directory carries over, and each result is the trimmed output followed by
// a "<shellId: N completed with exit code X>" line, N counting the
// session's shells from 0; view returns the file's text; create and edit
// answer with one sentence naming the path as the model wrote it; grep and
// glob run ripgrep, as Copilot does (its telemetry says search_engine
// "ripgrep"). Paths under the recorded cwd are mapped to the workspace and
// back in what the model sees.

var _ trajectory.Replayer = format{}

// bashTimeout is Copilot's default commandTimeout (30 s); a sync command
// still running then is left running by Copilot, which the replay cannot
// reproduce, so it is killed and the result says so.
const bashTimeout = 30 * time.Second

type session struct {
	env    trajectory.ToolEnv
	ws     string // where the tools run
	orig   string // the recorded cwd
	r      *run.Runner
	sh     *run.Session
	shells int // shellIds handed out
	rgBin  string
}

// NewToolSession starts one replay's tool state.
func (format) NewToolSession(env trajectory.ToolEnv) (trajectory.ToolSession, error) {
	ws, err := env.Dirs(AgentName)
	if err != nil {
		return nil, err
	}
	s := &session{env: env, ws: filepath.Clean(ws), orig: filepath.Clean(ws)}
	if env.OriginalCwd != "" {
		s.orig = filepath.Clean(env.OriginalCwd)
	}
	e := env.Env
	if e == nil {
		e = []string{}
	}
	shell := []string{"/bin/bash", "-c"}
	if _, err := os.Stat("/bin/bash"); err != nil {
		shell = []string{"sh", "-c"}
	}
	r, err := run.NewRunner(run.Options{Env: e, Shell: shell, Isolation: env.Isolation})
	if err != nil {
		return nil, fmt.Errorf("copilot: %w", err)
	}
	s.r = r
	if s.sh, err = r.NewSession(s.ws); err != nil {
		r.Close()
		return nil, fmt.Errorf("copilot: %w", err)
	}
	return s, nil
}

func (s *session) Close() error { return s.r.Close() }

// Execute runs one call of step.
func (s *session) Execute(ctx context.Context, step int, call *trajectory.ToolCall) (trajectory.Fresh, error) {
	start := time.Now()
	args := gjson.ParseBytes(call.Arguments)
	var f trajectory.Fresh
	var err error
	switch call.Name {
	case ToolBash:
		f, err = s.bash(ctx, args, s.logPath(step, call))
	case ToolView:
		f = s.view(args)
	case ToolCreate:
		f = s.create(args)
	case ToolEdit:
		f = s.edit(args)
	case ToolGrep:
		f, err = s.grep(ctx, args)
	case ToolGlob:
		f, err = s.glob(ctx, args)
	default:
		return trajectory.Fresh{}, fmt.Errorf("copilot: %q is not a tool the replay runs", call.Name)
	}
	if err != nil {
		return trajectory.Fresh{}, err
	}
	f.Duration = max(time.Since(start), time.Nanosecond) // a Fresh with no duration reads as reused
	if f.LogPath == "" && s.env.LogDir != "" {
		p := s.logPath(step, call)
		if err := os.WriteFile(p, []byte(f.Content), 0o600); err != nil {
			return f, fmt.Errorf("copilot: writing %s: %w", p, err)
		}
		f.LogPath = p
	}
	return f, nil
}

var unsafeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]+`) })

func (s *session) logPath(step int, call *trajectory.ToolCall) string {
	if s.env.LogDir == "" {
		return ""
	}
	id := unsafeName().ReplaceAllString(call.ID, "_")
	if len(id) > 80 {
		id = id[:80]
	}
	return filepath.Join(s.env.LogDir, fmt.Sprintf("step-%04d-%s-%s.log", step, call.Name, id))
}

// real maps a path the model wrote (absolute, under the recorded cwd, or
// relative to it) to the one the replay touches.
func (s *session) real(p string) string {
	if !filepath.IsAbs(p) {
		return filepath.Join(s.ws, p)
	}
	p = filepath.Clean(p)
	if rel, err := filepath.Rel(s.orig, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return filepath.Join(s.ws, rel)
	}
	return p
}

// shown maps workspace paths in a tool's output back to the recorded cwd,
// so the text is what the agent saw.
func (s *session) shown(text string) string {
	if s.ws == s.orig {
		return text
	}
	return strings.ReplaceAll(text, s.ws, s.orig)
}

func fail(text string) trajectory.Fresh { return trajectory.Fresh{Content: text, IsError: true} }

func (s *session) bash(ctx context.Context, args gjson.Result, logPath string) (trajectory.Fresh, error) {
	timeout := bashTimeout
	if w := args.Get("initial_wait"); w.Type == gjson.Number && w.Num > 0 {
		timeout = time.Duration(w.Num * float64(time.Second))
	}
	res, err := s.sh.Shell(ctx, run.ShellRequest{Command: args.Get("command").Str, Timeout: timeout,
		LogPath: logPath, MergeStderr: true})
	if err != nil && res.Pid == 0 {
		return trajectory.Fresh{}, fmt.Errorf("copilot: bash: %w", err)
	}
	id := s.shells
	s.shells++
	out := jsstr.Trim(s.shown(res.Combined.String()))
	trailer := fmt.Sprintf("<shellId: %d completed with exit code %d>", id, res.ExitCode)
	if res.TimedOut {
		trailer = fmt.Sprintf("<shellId: %d killed by pvisor after %s: the replay does not keep commands running>", id, timeout)
	}
	code := res.ExitCode
	// The line break comes before the trailer even when the command printed
	// nothing ("\n<shellId: 0 completed with exit code 0>").
	return trajectory.Fresh{Content: out + "\n" + trailer, ExitCode: &code, LogPath: logPath}, nil
}

// Failed calls: Copilot stores only a short error.message (the longer text
// the live model got is in no file), and a resumed Copilot sends the model
// that message, so it is what the replay reproduces.
const (
	errNoPath  = "Path does not exist"
	errExists  = "Path already exists"
	errNoMatch = "No match found"
)

func (s *session) view(args gjson.Result) trajectory.Fresh {
	real := s.real(args.Get("path").Str)
	if st, err := os.Stat(real); err == nil && st.IsDir() {
		return s.viewDir(real)
	}
	data, err := os.ReadFile(real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(errNoPath)
	case err != nil:
		return fail(err.Error())
	}
	text := string(data)
	if r := args.Get("view_range"); r.IsArray() && len(r.Array()) == 2 {
		lines := strings.Split(text, "\n")
		a, b := int(r.Array()[0].Int()), int(r.Array()[1].Int())
		if b < 0 || b > len(lines) {
			b = len(lines)
		}
		if a < 1 {
			a = 1
		}
		if a <= b {
			text = strings.Join(lines[a-1:b], "\n")
		}
	}
	return trajectory.Fresh{Content: text}
}

// viewDir lists a directory's entries by name, one a line (1.0.102 on a
// directory of one file printed its name).
func (s *session) viewDir(dir string) trajectory.Fresh {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fail(err.Error())
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return trajectory.Fresh{Content: strings.Join(names, "\n")}
}

func (s *session) create(args gjson.Result) trajectory.Fresh {
	p, text := args.Get("path").Str, args.Get("file_text").Str
	real := s.real(p)
	if _, err := os.Lstat(real); err == nil {
		return fail(errExists)
	}
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		return fail(err.Error())
	}
	if err := os.WriteFile(real, []byte(text), 0o644); err != nil {
		return fail(err.Error())
	}
	return trajectory.Fresh{Content: fmt.Sprintf("Created file %s with %d characters", p, jsstr.Len(text))}
}

func (s *session) edit(args gjson.Result) trajectory.Fresh {
	p, old, repl := args.Get("path").Str, args.Get("old_str").Str, args.Get("new_str").Str
	real := s.real(p)
	data, err := os.ReadFile(real)
	if err != nil {
		return fail(errNoPath)
	}
	switch n := strings.Count(string(data), old); {
	case n == 0:
		return fail(errNoMatch)
	case n > 1:
		// Not measured: Copilot refuses an ambiguous old_str; its wording
		// here is a guess the comparison would show.
		return fail("Multiple matches found")
	}
	st, _ := os.Stat(real)
	if err := os.WriteFile(real, []byte(strings.Replace(string(data), old, repl, 1)), st.Mode().Perm()); err != nil {
		return fail(err.Error())
	}
	return trajectory.Fresh{Content: fmt.Sprintf("File %s updated with changes.", p)}
}
