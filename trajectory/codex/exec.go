package codex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
)

// session re-executes Codex tool calls with codex-rs semantics: every
// command runs on its own in its workdir (nothing carries over between
// calls except live unified exec processes, addressed by the session ids
// the recording used), apply_patch is applied by the session itself, and
// each result is formatted as the recorded CLI formats it.
type session struct {
	env    trajectory.ToolEnv
	r      *run.Runner
	ws     string // the workspace: the mapped turn cwd
	orig   string // the recorded cwd, "" when unknown or equal to ws
	shapes shapes
	shell  string // the user's shell
	seq    int
	fresh  int               // next id for sessions the recording has none for
	execs  map[int]*liveExec // live unified exec sessions by model-visible id
}

type liveExec struct {
	tty bool
	log string
}

var _ trajectory.Replayer = format{}

// NewToolSession starts a replay writing the result shapes of env.Version;
// when it is unknown, shapes that changed between versions are learnt from
// the recorded results, or are the newest CLI's.
func (format) NewToolSession(env trajectory.ToolEnv) (trajectory.ToolSession, error) {
	return NewToolSessionVersion(env, env.Version)
}

// NormalizeObservation masks the random and measured fields (see Normalize).
func (format) NormalizeObservation(content string) string { return Normalize(content) }

// NewToolSessionVersion starts a replay that writes the result shapes of
// the given cli_version (Trajectory.Version).
func NewToolSessionVersion(env trajectory.ToolEnv, version string) (trajectory.ToolSession, error) {
	if !filepath.IsAbs(env.Workspace) {
		return nil, fmt.Errorf("codex tool session: workspace %q is not an absolute path", env.Workspace)
	}
	// Codex keeps at most 1 MiB of a unified exec process's output, half
	// from the start and half from the end; run's per-stream cap is the
	// same head/tail split.
	r, err := run.NewRunner(run.Options{Env: env.Env, MaxOutput: execBufferCap, Isolation: env.Isolation})
	if err != nil {
		return nil, err
	}
	s := &session{
		env:    env,
		r:      r,
		ws:     filepath.Clean(env.Workspace),
		shapes: shapes{era: eraFor(version)},
		fresh:  freshSessionBase,
		execs:  map[int]*liveExec{},
	}
	if env.OriginalCwd != "" && filepath.Clean(env.OriginalCwd) != s.ws {
		s.orig = filepath.Clean(env.OriginalCwd)
	}
	s.shell = userShell(env.Env)
	return s, nil
}

// Close kills every process the session started.
func (s *session) Close() error { return s.r.Close() }

// Execute runs one call. The error flag of the result follows the rule the
// decoder reads recorded results with, so that both compare alike.
func (s *session) Execute(ctx context.Context, step int, call *trajectory.ToolCall) (trajectory.Fresh, error) {
	if err := (format{}).CheckReplayable(call); err != nil {
		return trajectory.Fresh{}, fmt.Errorf("step %d: %w", step, err)
	}
	s.shapes.learn(call)
	s.seq++
	var (
		f   trajectory.Fresh
		err error
	)
	switch call.Name {
	case ToolExecCommand:
		f, err = s.execCommand(ctx, call)
	case ToolWriteStdin:
		f, err = s.writeStdin(ctx, call)
	case ToolShell, ToolContainerExec, ToolLocalShellCall:
		f, err = s.legacyShell(ctx, call)
	case ToolShellCommand:
		f, err = s.shellCommand(ctx, call)
	case ToolApplyPatch:
		f, err = s.applyPatchTool(call)
	case ToolUpdatePlan:
		f.Content = PlanUpdated
		if o := call.Observation; o != nil && strings.HasPrefix(o.Content, "unsupported call: ") {
			// 0.171 with a model whose tool set lacks update_plan.
			f.Content = "unsupported call: " + call.Name
		}
	default:
		return f, fmt.Errorf("codex: no executor for tool %q", call.Name)
	}
	if err != nil {
		return f, err
	}
	f.IsError = failedText(f.Content)
	return f, nil
}

// failedText applies the decoder's failure rule to a result text.
func failedText(content string) bool { return rawFailed(serdeString(content)) }

// userShell is the shell Codex would use: $SHELL when it is bash, zsh or
// sh and exists here, else /bin/bash, else /bin/sh.
func userShell(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "SHELL="); ok && knownShell(v) && exists(v) {
			return v
		}
	}
	if exists("/bin/bash") {
		return "/bin/bash"
	}
	return "/bin/sh"
}

func knownShell(p string) bool {
	switch filepath.Base(p) {
	case "bash", "zsh", "sh":
		return true
	}
	return false
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// shellArgv is [shell, "-lc" or "-c"]: a model-chosen shell when it is one
// Codex knows and exists here (Codex falls back to the user's shell
// otherwise), with login semantics unless the call asked for none.
func (s *session) shellArgv(model string, login *bool) []string {
	sh := s.shell
	if model != "" && knownShell(model) {
		if filepath.IsAbs(model) && exists(model) {
			sh = model
		} else if !filepath.IsAbs(model) {
			sh = model // resolved on the tools' PATH
		}
	}
	flag := "-lc"
	if login != nil && !*login {
		flag = "-c"
	}
	return []string{sh, flag}
}

// isPathChar reports whether c can continue a file name.
func isPathChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// replacePath replaces every occurrence of the directory from in t, as a
// whole path or a prefix of one, by to.
func replacePath(t, from, to string) string {
	if from == "" || from == to || !strings.Contains(t, from) {
		return t
	}
	var b strings.Builder
	for {
		i := strings.Index(t, from)
		if i < 0 {
			b.WriteString(t)
			return b.String()
		}
		end := i + len(from)
		whole := (i == 0 || !isPathChar(t[i-1]) && t[i-1] != '/') && (end == len(t) || !isPathChar(t[end]))
		b.WriteString(t[:i])
		if whole {
			b.WriteString(to)
		} else {
			b.WriteString(from)
		}
		t = t[end:]
	}
}

// mapText rewrites recorded-cwd paths in call arguments to the workspace.
func (s *session) mapText(t string) string { return replacePath(t, s.orig, s.ws) }

// unmapText rewrites workspace paths in texts Codex itself composes (patch
// summaries and errors) back to the recorded cwd, the directory the
// session says it ran in.
func (s *session) unmapText(t string) string {
	if s.orig == "" {
		return t
	}
	return replacePath(t, s.ws, s.orig)
}

// resolveDir is the directory a call runs in: its workdir (mapped, and
// resolved against the turn cwd when relative) or the turn cwd.
func (s *session) resolveDir(workdir string) string {
	if workdir == "" {
		return s.ws
	}
	d := s.mapText(workdir)
	if !filepath.IsAbs(d) {
		d = filepath.Join(s.ws, d)
	}
	return filepath.Clean(d)
}

// logPath names the full-output log of the current call.
func (s *session) logPath(call *trajectory.ToolCall) string {
	if s.env.LogDir == "" {
		return ""
	}
	id := strings.Map(func(r rune) rune {
		if r < 0x80 && isPathChar(byte(r)) {
			return r
		}
		return '_'
	}, call.ID)
	return filepath.Join(s.env.LogDir, fmt.Sprintf("%04d-%s-%s.log", s.seq, call.Name, id))
}

// spawnFailure reports whether err is a process that could not start for
// a reason Codex reports to the model (missing directory or program), not
// a pvisor failure.
func spawnFailure(err error) (*run.Error, bool) {
	var re *run.Error
	if !errors.As(err, &re) {
		return nil, false
	}
	switch re.Kind {
	case run.NotFound, run.NotDir, run.PermissionDenied:
		return re, true
	}
	return nil, false
}

// spawnErrno renders a start failure as the io::Error Codex got.
func spawnErrno(re *run.Error) string {
	switch re.Kind {
	case run.NotDir:
		return "Not a directory (os error 20)"
	case run.PermissionDenied:
		return "Permission denied (os error 13)"
	}
	if re.Err != nil {
		return rustIOError(re.Err)
	}
	return "No such file or directory (os error 2)"
}
