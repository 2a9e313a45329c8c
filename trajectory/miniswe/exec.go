package miniswe

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
	"github.com/pvisor/pvisor/trajectory/miniswe/tmpl"
)

// The replay runs each bash action as mini's environment of the recorded
// version does (environments/local.py in 1.17 and 2.4): a fresh
// `/bin/sh -c` per command (subprocess.run/Popen with shell=True) in the
// environment's cwd or the directory mini ran in, with mini's environment
// plus config.environment.env, stderr merged into stdout, waiting for the
// pipes to close, decoded as UTF-8 with errors="replace" and universal
// newlines (text=True), killed after config.environment.timeout seconds
// (2.x kills the process group). The result is rendered with the saved
// observation template, as mini showed it to the model.

var _ trajectory.Replayer = format{}
var _ trajectory.RebuildChecker = format{}

// maxOutput bounds what one command may print: mini keeps it all in memory
// to render, and so does the replay.
const maxOutput = 16 << 20

type session struct {
	env trajectory.ToolEnv
	cfg *runConfig
	ws  string
	r   *run.Runner
}

// CheckRebuild refuses, before anything runs, trajectories whose
// observations the replay cannot render: no saved config, an environment
// class it does not reproduce, a template outside the supported subset.
func (format) CheckRebuild(t *trajectory.Trajectory) error {
	_, err := loadConfig(t)
	return err
}

// NewToolSession starts one replay's tool state.
func (format) NewToolSession(env trajectory.ToolEnv) (trajectory.ToolSession, error) {
	if env.Trajectory == nil {
		return nil, fmt.Errorf("mini-swe-agent: the replay needs the decoded trajectory (its saved config)")
	}
	cfg, err := loadConfig(env.Trajectory)
	if err != nil {
		return nil, fmt.Errorf("mini-swe-agent: %w", err)
	}
	ws, err := env.Dirs("mini-swe-agent")
	if err != nil {
		return nil, err
	}
	base := env.Env
	if base == nil {
		base = []string{}
	}
	r, err := run.NewRunner(run.Options{Env: cfg.environ(base), Shell: cfg.shell, MaxOutput: maxOutput, Isolation: env.Isolation})
	if err != nil {
		return nil, fmt.Errorf("mini-swe-agent: %w", err)
	}
	return &session{env: env, cfg: cfg, ws: ws, r: r}, nil
}

func (s *session) Close() error { return s.r.Close() }

// dir is where a command runs: the config's cwd mapped into the workspace
// (mini ran there, or in its own cwd when the config names none).
func (s *session) dir() string {
	cwd, orig := s.cfg.cwd, s.env.OriginalCwd
	if cwd == "" || orig == "" || cwd == orig {
		return s.ws
	}
	if rel, err := filepath.Rel(orig, cwd); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.Join(s.ws, rel)
	}
	return s.ws
}

// Execute runs one bash action and renders its observation.
func (s *session) Execute(ctx context.Context, step int, call *trajectory.ToolCall) (trajectory.Fresh, error) {
	if err := Format.CheckReplayable(call); err != nil {
		return trajectory.Fresh{}, fmt.Errorf("mini-swe-agent: %w", err)
	}
	cmd := gjson.GetBytes(call.Arguments, "command").Str
	logPath := s.logPath(step, call)
	timeout := time.Duration(s.cfg.timeoutSecs) * time.Second
	res, err := s.r.Shell(ctx, run.ShellRequest{Command: cmd, Dir: s.dir(), Timeout: timeout, LogPath: logPath,
		WaitForEOF: true, MergeStderr: true})
	if err != nil {
		return trajectory.Fresh{}, err
	}
	if res.Combined.Truncated() {
		return trajectory.Fresh{}, fmt.Errorf("the command printed %d bytes, more than the replay keeps (%d); mini would render all of it", res.Combined.Total, maxOutput)
	}
	o := outcome{command: cmd, timeoutSecs: s.cfg.timeoutSecs, raw: res.Combined.Data, timedOut: res.TimedOut, code: res.ExitCode}
	if res.Signal != 0 {
		o.code = -int(res.Signal) // Popen.returncode of a killed process
	}
	n := s.env.Trajectory.ActionIndex(step) + 1 // mini's n_calls when it rendered this result
	f, err := s.cfg.render(o, n)
	if err != nil {
		return trajectory.Fresh{}, fmt.Errorf("mini-swe-agent: step %d: %w", step, err)
	}
	f.Duration = max(res.Duration, time.Nanosecond)
	f.LogPath = logPath
	if !res.TimedOut {
		code := o.code
		f.ExitCode = &code
	}
	return f, nil
}

var unsafeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_.-]`) })

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

// outcome is one command's raw result.
type outcome struct {
	command     string
	timeoutSecs int
	raw         []byte
	timedOut    bool
	code        int
}

// render turns an outcome into the observation mini would have recorded.
// nCalls is the model-call count mini's template variables had then.
func (c *runConfig) render(o outcome, nCalls int) (trajectory.Fresh, error) {
	vars := make(map[string]any, len(c.vars)+3)
	for k, v := range c.vars {
		vars[k] = v
	}
	if c.format == FormatV1 {
		if o.timedOut {
			// ExecutionTimeoutError: subprocess.run's partial output is the
			// undecoded bytes read so far, without newline translation.
			vars["action"] = map[string]any{"action": o.command}
			vars["output"] = jsstr.Decode(o.raw)
			text, err := c.timeout.Render(vars)
			if err != nil {
				return trajectory.Fresh{}, fmt.Errorf("timeout_template: %w", err)
			}
			return trajectory.Fresh{Content: text, IsError: failed(gjson.Result{}, text)}, nil
		}
		vars["output"] = map[string]any{"output": pyText(o.raw), "returncode": o.code, "action": o.command}
		text, err := c.observation.Render(vars)
		if err != nil {
			return trajectory.Fresh{}, fmt.Errorf("action_observation_template: %w", err)
		}
		return trajectory.Fresh{Content: text, IsError: failed(gjson.Result{}, text)}, nil
	}
	vars["n_model_calls"] = nCalls
	out := map[string]any{"output": pyText(o.raw), "returncode": o.code, "exception_info": ""}
	var extra []kv
	if o.timedOut {
		if c.shell[0] != "/bin/sh" {
			return trajectory.Fresh{}, fmt.Errorf("a command of a Docker environment timed out; mini's message names the docker argv, which the replay cannot reproduce")
		}
		// LocalEnvironment re-raises TimeoutExpired with the whole output
		// read until the group was killed.
		msg := fmt.Sprintf("Command '%s' timed out after %d seconds", o.command, o.timeoutSecs)
		out["returncode"] = -1
		out["exception_info"] = "An error occurred while executing the command: " + msg
		extra = []kv{{"exception_type", "TimeoutExpired"}, {"exception", msg}}
	}
	vars["output"] = out
	text, err := c.observation.Render(vars)
	if err != nil {
		return trajectory.Fresh{}, fmt.Errorf("observation_template: %w", err)
	}
	// The observation message's extra, in mini's key order (timestamp
	// keeps its recorded value).
	native := []kv{{"raw_output", out["output"]}, {"returncode", out["returncode"]}, {"exception_info", out["exception_info"]}}
	native = append(native, extra...)
	rc := out["returncode"].(int)
	return trajectory.Fresh{Content: text, IsError: rc != 0, Native: encodeObject(native)}, nil
}

type kv struct {
	k string
	v any
}

// encodeObject writes an ordered JSON object with Python's json escaping.
func encodeObject(fields []kv) json.RawMessage {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(tmpl.PyJSON(f.k))
		b.WriteByte(':')
		b.WriteString(tmpl.PyJSON(f.v))
	}
	b.WriteByte('}')
	return json.RawMessage(b.String())
}

// pyText is what text=True makes of a command's output: UTF-8 decoded with
// errors="replace", then universal newlines ("\r\n" and "\r" become "\n").
// Python's decoder replaces each maximal ill-formed subsequence with one
// U+FFFD, as WHATWG's does (jsstr.Decode).
func pyText(raw []byte) string {
	s := jsstr.Decode(raw)
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}
