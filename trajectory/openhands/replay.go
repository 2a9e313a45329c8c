package openhands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
)

// The replay re-runs the actions whose semantics OpenHands documents in its
// public source, as its local runtime performs them (openhands-tools 1.x
// TerminalExecutor and FileEditorExecutor; V0's CmdRunAction and oh_aci
// str_replace_editor behave the same):
//
//   - terminal / run: OpenHands keeps one bash session (in tmux), so the
//     working directory and exported variables carry over from call to
//     call (here each call is a new bash started where the last ended, with
//     its exports; shell functions and unexported variables do not carry
//     over); the command runs on a terminal of OpenHands' size, and the
//     result is what the terminal shows, surrounding whitespace stripped,
//     the exit code beside it.
//   - file_editor / edit / read (oh_aci): editor.go.
//   - think: OpenHands only logs the thought.
//
// Everything else is refused by CheckReplayable before anything runs.

var _ trajectory.Replayer = format{}

// thinkResult is the text of OpenHands' ThinkObservation.
const thinkResult = "Your thought has been logged."

// defaultTimeout bounds a command that gives none; OpenHands would return
// after 10 s without new output and let the model decide, which a replay
// cannot, so it waits this long and reports the command as timed out.
const defaultTimeout = 120 * time.Second

type session struct {
	env  trajectory.ToolEnv
	ws   string
	orig string
	r    *run.Runner
	sh   *run.Session
	ed   editor
	n    int
}

// NewToolSession starts a shell session in the workspace.
func (format) NewToolSession(env trajectory.ToolEnv) (trajectory.ToolSession, error) {
	ws, err := env.Dirs("openhands")
	if err != nil {
		return nil, err
	}
	r, err := run.NewRunner(run.Options{Env: env.Env, Isolation: env.Isolation})
	if err != nil {
		return nil, err
	}
	sh, err := r.NewSession(ws)
	if err != nil {
		r.Close()
		return nil, err
	}
	sh.CarryExports = true
	// OpenHands' sandboxes mount the workspace at /workspace (V0's docker
	// runtime, V1's agent server): the place recorded paths start from
	// when the file names no directory of its own.
	orig := "/workspace"
	if env.OriginalCwd != "" {
		orig = filepath.Clean(env.OriginalCwd)
	}
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	return &session{env: env, ws: ws, orig: orig, r: r, sh: sh}, nil
}

func (s *session) Close() error { return s.r.Close() }

// local maps a recorded path under the recorded working directory to the
// workspace.
func (s *session) local(p string) string {
	if s.orig == "" || s.orig == s.ws {
		return p
	}
	if p == s.orig {
		return s.ws
	}
	if rest, ok := strings.CutPrefix(p, s.orig+"/"); ok {
		return filepath.Join(s.ws, rest)
	}
	return p
}

func (s *session) Execute(ctx context.Context, step int, call *trajectory.ToolCall) (trajectory.Fresh, error) {
	if err := (format{}).CheckReplayable(call); err != nil {
		return trajectory.Fresh{}, err
	}
	switch call.Name {
	case ActionRun, ToolTerminal:
		return s.terminal(ctx, call)
	case ActionThink: // V1 names it the same
		return trajectory.Fresh{Content: thinkResult, Native: nativeFields(false, nil)}, nil
	case ActionRead:
		// FileReadAction (oh_aci) is the editor's view.
		var a struct {
			Path      string `json:"path"`
			ViewRange []int  `json:"view_range"`
		}
		if err := json.Unmarshal(call.Arguments, &a); err != nil {
			return trajectory.Fresh{}, fmt.Errorf("read arguments: %w", err)
		}
		return s.edit(editArgs{Command: "view", Path: a.Path, ViewRange: a.ViewRange})
	case ActionEdit, ToolFileEditor:
		var a editArgs
		if err := json.Unmarshal(call.Arguments, &a); err != nil {
			return trajectory.Fresh{}, fmt.Errorf("%s arguments: %w", call.Name, err)
		}
		return s.edit(a)
	}
	return trajectory.Fresh{}, fmt.Errorf("openhands: %s has no replay", call.Name)
}

func (s *session) edit(a editArgs) (trajectory.Fresh, error) {
	start := time.Now()
	a.Path = s.local(a.Path)
	var out string
	err := s.confine(a.Path)
	if err == nil {
		out, err = s.ed.run(a, s.sh.Cwd())
	}
	var te *toolError
	switch {
	case errors.As(err, &te):
		return trajectory.Fresh{Content: te.msg, IsError: true, Native: nativeFields(true, nil), Duration: time.Since(start)}, nil
	case err != nil:
		return trajectory.Fresh{}, err
	}
	return trajectory.Fresh{Content: out, Native: nativeFields(false, nil), Duration: time.Since(start)}, nil
}

func (s *session) terminal(ctx context.Context, call *trajectory.ToolCall) (trajectory.Fresh, error) {
	cmd := gjson.GetBytes(call.Arguments, "command").Str
	if s.orig != "" && s.orig != s.ws {
		cmd = strings.ReplaceAll(cmd, s.orig, s.ws)
	}
	timeout := defaultTimeout
	if t := gjson.GetBytes(call.Arguments, "timeout"); t.Type == gjson.Number && t.Float() > 0 {
		timeout = time.Duration(t.Float() * float64(time.Second))
	}
	s.n++
	logPath := ""
	if s.env.LogDir != "" {
		logPath = filepath.Join(s.env.LogDir, "openhands-"+strconv.Itoa(s.n)+".log")
	}
	// The terminal's size: openhands-tools 1.x sizes its tmux session
	// 256x200; V0's runtime used 1000x1000.
	rows, cols := uint16(200), uint16(256)
	if call.Name == ActionRun {
		rows, cols = 1000, 1000
	}
	res, err := s.sh.Shell(ctx, run.ShellRequest{Command: cmd, Timeout: timeout, LogPath: logPath, TTY: true, Rows: rows, Cols: cols, WaitForEOF: true})
	if err != nil {
		return trajectory.Fresh{}, err
	}
	code := res.ExitCode
	if res.TimedOut {
		code = -1 // OpenHands' "still running" exit code
	}
	return trajectory.Fresh{
		Content:  maybeTruncate(strings.TrimSpace(strings.ReplaceAll(res.Combined.String(), "\r\n", "\n")), maxCmdOutputChars, noticeDefault),
		IsError:  code != 0,
		ExitCode: &code,
		Native:   nativeFields(false, &code),
		Duration: res.Duration,
		LogPath:  logPath,
	}, nil
}

// confine refuses a path outside the workspace (after following symbolic
// links as far as they exist): the editor runs in pvisor's own process, and
// a trajectory must not reach past the sandbox. The model sees an error
// result, as OpenHands shows an invalid path.
func (s *session) confine(p string) error {
	if !filepath.IsAbs(p) {
		return nil // the editor refuses relative paths itself
	}
	p = filepath.Clean(p)
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			p = filepath.Join(real, rest)
			break
		}
		if dir == "/" {
			break
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
	if p == s.ws || strings.HasPrefix(p, s.ws+"/") {
		return nil
	}
	return &toolError{"Invalid `path` parameter: " + p + ". The path is outside the workspace the replay runs in."}
}

// nativeFields are the result fields Rebuild writes into the observation
// event beside its text: OpenHands' own is_error (a failed command is not
// an error result, a failed edit is) and, for commands, the exit code.
func nativeFields(isError bool, exit *int) json.RawMessage {
	m := map[string]any{"is_error": isError}
	if exit != nil {
		m["exit_code"] = *exit
	}
	b, _ := json.Marshal(m)
	return b
}

// RefuseRun refuses to continue V0 trajectories before anything runs:
// they were written by the OpenHands 0.x server, whose agent loop pvisor
// does not run (--replay-only is pvisor's own, above). V1 conversations
// continue with openhands-sdk through pvisor's runner.
func (format) RefuseRun(t *trajectory.Trajectory, continuation bool) error {
	if !continuation || t == nil || t.Format == FormatV1Events {
		return nil
	}
	return fmt.Errorf("continuing an OpenHands V0 trajectory (%s) is not supported: it needs the OpenHands 0.x server's agent loop, which does not install here; pvisor continues OpenHands V1 (software-agent-sdk) event logs. Use --replay-only to re-run the prefix and rebuild its events", t.Format)
}
