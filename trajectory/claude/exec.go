package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
)

// The replay side of the format: a ToolSession re-executes Claude Code's
// built-in tools with the CLI's own semantics (readFileState checks, the
// Bash cwd that carries over and is reset when it leaves the project,
// ripgrep-backed Glob/Grep) and formats each result the way the CLI writes
// it into the transcript: the tool_result content (a string, an error
// wrapped in <tool_use_error> when the CLI rejects the input, or the bare
// message when the tool throws) and the entry's toolUseResult.
//
// The texts follow the CLI's bundled source (2.1.197 and, for the older
// shapes, 2.1.7) and the sessions in testdata. Claude Code's wording has
// changed between versions and by server-side flags, and a ToolSession does
// not know which version recorded the session; it learns the shape from
// the recorded observation of each call before formatting the fresh one
// (see style.go), and defaults to the 2.1.197 shapes.

var _ trajectory.Replayer = (*Format)(nil)

// NewToolSession implements trajectory.Replayer.
func (*Format) NewToolSession(env trajectory.ToolEnv) (trajectory.ToolSession, error) {
	if env.Workspace == "" || !filepath.IsAbs(env.Workspace) {
		return nil, fmt.Errorf("claude: workspace %q is not an absolute path", env.Workspace)
	}
	ws := filepath.Clean(env.Workspace)
	orig := ws
	if env.OriginalCwd != "" {
		orig = filepath.Clean(env.OriginalCwd)
	}
	if env.LogDir != "" {
		if err := os.MkdirAll(env.LogDir, 0o700); err != nil {
			return nil, fmt.Errorf("claude: log dir: %w", err)
		}
	}
	r, err := run.NewRunner(run.Options{Env: env.Env, MaxOutput: maxCapture, Isolation: env.Isolation})
	if err != nil {
		return nil, err
	}
	sh, err := r.NewSession(ws)
	if err != nil {
		r.Close()
		return nil, err
	}
	return &toolSession{
		env: env, ws: ws, orig: orig, runner: r, shell: sh,
		files: map[string]readState{},
	}, nil
}

// maxCapture bounds what is kept of each output stream (head and tail);
// Claude Code keeps up to 32 MB in toolUseResult but shows the model at
// most a 2 KB preview of anything over 30000 characters.
const maxCapture = 8 << 20

type toolSession struct {
	env     trajectory.ToolEnv
	ws      string // where the tools run
	orig    string // the recorded project directory
	runner  *run.Runner
	shell   *run.Session
	style   style
	files   map[string]readState // Claude's readFileState, by workspace path
	fileSeq int
	todos   json.RawMessage // the TodoWrite list, "" when empty
	seq     int
}

// readState is one readFileState entry: what the agent last saw of a file.
type readState struct {
	content   string
	timestamp int64 // floor(mtime in ms) when it was read or written
	offset    int   // 0 when the whole file is known (written or edited)
	limit     int   // 0 when unlimited
	partial   bool
	seq       int // order of the last update
}

// result is one formatted observation before it becomes a Fresh.
type toolResult struct {
	content string
	isError bool
	native  any // toolUseResult; nil leaves it out
	exit    *int
	logPath string
}

// Execute implements trajectory.ToolSession.
func (s *toolSession) Execute(ctx context.Context, step int, call *trajectory.ToolCall) (trajectory.Fresh, error) {
	if err := New().CheckReplayable(call); err != nil {
		return trajectory.Fresh{}, fmt.Errorf("claude: %s call %s cannot be replayed: %w", call.Name, call.ID, err)
	}
	if call.Observation != nil {
		s.style.learn(call.Name, call.Observation.Content, call.Observation.IsError)
	}
	s.seq++
	if err := s.enterRecordedCwd(call.Cwd); err != nil {
		return trajectory.Fresh{}, err
	}
	start := time.Now()
	in := gjson.ParseBytes(call.Arguments)
	var (
		res toolResult
		err error
	)
	switch call.Name {
	case "Bash":
		res, err = s.bash(ctx, step, call, in)
	case "Read":
		res, err = s.read(in)
	case "Write":
		res, err = s.write(in)
	case "Edit":
		res, err = s.edit(in)
	case "MultiEdit":
		res, err = s.multiEdit(in)
	case "Glob":
		res, err = s.glob(in, start, call.Observation)
	case "Grep":
		res, err = s.grep(in)
	case "LS":
		res, err = s.ls(in)
	case "TodoWrite":
		res, err = s.todoWrite(in)
	default:
		return trajectory.Fresh{}, fmt.Errorf("claude: no replay for tool %s", call.Name)
	}
	if err != nil {
		return trajectory.Fresh{}, err
	}
	f := trajectory.Fresh{Content: res.content, IsError: res.isError, ExitCode: res.exit,
		Duration: time.Since(start), LogPath: res.logPath}
	if res.native != nil {
		b, err := marshalJS(res.native)
		if err != nil {
			return trajectory.Fresh{}, fmt.Errorf("claude: encoding toolUseResult of %s: %w", call.ID, err)
		}
		f.Native = b
	}
	return f, nil
}

// enterRecordedCwd moves the shell to the directory the session recorded for
// the call. Within one process that is where the last cd left the shell, so
// nothing changes; after a resume Claude Code is a new process whose shell
// starts at the project directory again, and the recorded cwd says so. The
// record is preferred over simulating the carry-over, which would leak a cd
// made before the resume. A recorded directory outside the project or one
// that is missing here keeps the simulated one.
func (s *toolSession) enterRecordedCwd(recorded string) error {
	if recorded == "" || !filepath.IsAbs(recorded) {
		return nil
	}
	dir := s.local(filepath.Clean(recorded))
	if dir == s.shell.Cwd() || dir != s.ws && !strings.HasPrefix(dir, s.ws+"/") {
		return nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil
	}
	return s.shell.SetCwd(dir)
}

// Close implements trajectory.ToolSession.
func (s *toolSession) Close() error { return s.runner.Close() }

// local maps a path from the recorded session into the workspace.
func (s *toolSession) local(p string) string {
	if s.orig == s.ws || p == "" {
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

// recorded maps a workspace path back to the recorded one, for paths the
// tools print themselves.
func (s *toolSession) recorded(p string) string {
	if s.orig == s.ws || p == "" {
		return p
	}
	if p == s.ws {
		return s.orig
	}
	if rest, ok := strings.CutPrefix(p, s.ws+"/"); ok {
		return s.orig + "/" + rest
	}
	return p
}

// absPath resolves a tool's path argument the way Claude Code does
// (relative to the current directory, "~" to the home directory) and maps
// it into the workspace.
func (s *toolSession) absPath(p string) string {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		if home := s.envVar("HOME"); home != "" {
			p = home + p[1:]
		}
	case !filepath.IsAbs(p):
		return filepath.Join(s.shell.Cwd(), p)
	}
	return s.local(filepath.Clean(p))
}

func (s *toolSession) envVar(name string) string {
	for i := len(s.env.Env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(s.env.Env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// cwd is the directory the agent would print as its working directory.
func (s *toolSession) cwd() string { return s.recorded(s.shell.Cwd()) }

// rejected is an input the CLI's validateInput refuses: the message comes
// back wrapped in <tool_use_error> and toolUseResult is "Error: message".
func rejected(msg string) toolResult {
	return toolResult{content: "<tool_use_error>" + msg + "</tool_use_error>", isError: true, native: "Error: " + msg}
}

// thrown is an error the tool's call throws: the bare message, and
// toolUseResult "Error: message".
func thrown(msg string) toolResult {
	return toolResult{content: msg, isError: true, native: "Error: " + msg}
}

// logFile returns a fresh path under LogDir for a call's full output.
func (s *toolSession) logFile(step int, name string) string {
	if s.env.LogDir == "" {
		return ""
	}
	return filepath.Join(s.env.LogDir, fmt.Sprintf("step-%03d-%02d-%s.log", step, s.seq, strings.ToLower(name)))
}

// isPvisorError reports whether err is a failure of pvisor itself rather
// than something the agent's tool would have reported.
func isPvisorError(err error) bool {
	var re *run.Error
	if !errors.As(err, &re) {
		return true
	}
	// A device, FIFO or huge file would hang or exhaust pvisor: the call
	// cannot be replayed faithfully, which the run must say.
	return re.Kind == run.Closed || re.Kind == run.TooLarge || re.Kind == run.NotRegular
}
