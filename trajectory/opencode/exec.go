package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
)

// The replay re-executes OpenCode's built-in tools with the behaviour of
// opencode-ai 1.18 (the shapes below were checked against sessions the real
// CLI recorded, see testdata/replay/): every call is independent, the shell
// starts in the session directory each time (a `cd` does not carry over),
// and results are formatted as the tools format them.

// NewToolSession starts the tool state of one replay.
func (format) NewToolSession(env trajectory.ToolEnv) (trajectory.ToolSession, error) {
	return NewToolSession(env)
}

// NewToolSession is the method's body, usable without the interface.
func NewToolSession(env trajectory.ToolEnv) (trajectory.ToolSession, error) {
	if !filepath.IsAbs(env.Workspace) {
		return nil, fmt.Errorf("workspace %q is not an absolute path", env.Workspace)
	}
	if st, err := os.Stat(env.Workspace); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory", env.Workspace)
	}
	s := &session{env: env, cwd: filepath.Clean(env.Workspace), loaded: map[string]bool{}, claims: map[int]map[string]bool{}}
	s.shell = shellFor(env.Env)
	r, err := run.NewRunner(run.Options{Env: env.Env, Shell: []string{s.shell, "-c"}, Isolation: env.Isolation})
	if err != nil {
		return nil, err
	}
	s.runner = r
	s.worktree = worktreeOf(s.cwd)
	s.rg = lookPath("rg", env.Env)
	if env.LogDir != "" {
		if err := os.MkdirAll(env.LogDir, 0o700); err != nil {
			r.Close()
			return nil, err
		}
	}
	return s, nil
}

type session struct {
	env      trajectory.ToolEnv
	runner   *run.Runner
	cwd      string // the session directory: the workspace
	worktree string // the git top level above cwd, "/" outside a repository
	shell    string
	rg       string // ripgrep, as OpenCode finds it on PATH; "" when absent

	mu     sync.Mutex
	todos  []byte                  // the last todowrite list (JSON array)
	loaded map[string]bool         // instruction files earlier reads attached
	claims map[int]map[string]bool // instruction files claimed per step (message)
	nlog   int
}

// result is one tool's outcome before it becomes a Fresh.
type result struct {
	output   string
	isError  bool
	title    string
	metadata jobj // nil: none (errors)
	attach   []jobj
	exit     *int
	logPath  string
}

func (s *session) Close() error { return s.runner.Close() }

// Execute runs one call. Tool failures are Fresh values with IsError and
// OpenCode's own message (state.error); err is for pvisor's own failures.
func (s *session) Execute(ctx context.Context, step int, call *trajectory.ToolCall) (trajectory.Fresh, error) {
	start := time.Now()
	args := gjson.ParseBytes(call.Arguments)
	if !args.IsObject() {
		return trajectory.Fresh{}, fmt.Errorf("%s call %s: arguments are not a JSON object", call.Name, call.ID)
	}
	if o := call.Observation; o != nil && o.IsError && neverRan(o.Content) {
		// OpenCode refused the call before running it (permission denied,
		// schema violation) or it was interrupted: running it now would
		// change the workspace in a way the agent's run did not.
		return trajectory.Fresh{Content: o.Content, IsError: true, Duration: time.Since(start)}, nil
	}
	var res result
	var err error
	switch call.Name {
	case "bash":
		res, err = s.bash(ctx, call, args)
	case "read":
		res, err = s.read(step, args)
	case "write":
		res, err = s.write(args)
	case "edit":
		res, err = s.edit(args)
	case "multiedit":
		res, err = s.multiedit(args)
	case "glob":
		res, err = s.glob(ctx, args, s.recordedResult(call, false))
	case "grep":
		res, err = s.grep(ctx, args, s.recordedResult(call, true))
	case "list":
		res, err = s.list(ctx, args)
	case "apply_patch", "patch":
		res, err = s.applyPatch(call.Name, args)
	case "todowrite":
		res = s.todowrite(args)
	case "todoread":
		res = s.todoread()
	default:
		return trajectory.Fresh{}, fmt.Errorf("tool %q cannot be re-executed", call.Name)
	}
	if err != nil {
		return trajectory.Fresh{}, err
	}
	if !res.isError && res.metadata != nil && !res.metadata.has("truncated") {
		if res, err = s.truncateOutput(call, res); err != nil {
			return trajectory.Fresh{}, err
		}
	}
	f := trajectory.Fresh{Content: res.output, IsError: res.isError, ExitCode: res.exit,
		Duration: time.Since(start), LogPath: res.logPath}
	f.Native = res.native()
	return f, nil
}

// native is what Rebuild puts into the tool part's state: the title, the
// metadata object and, for images, the attachments. Errors carry metadata
// only when OpenCode keeps some (the shell's running output).
func (r result) native() json.RawMessage {
	var o jobj
	if !r.isError {
		o = append(o, jkv{"title", r.title})
	}
	if r.metadata != nil {
		o = append(o, jkv{"metadata", r.metadata})
	}
	if len(r.attach) > 0 {
		o = append(o, jkv{"attachments", r.attach})
	}
	if o == nil {
		return nil
	}
	return o.json()
}

// Truncation of tool outputs that do not truncate themselves (OpenCode's
// Truncate.output, head direction).
const (
	maxOutputLines = 2000
	maxOutputBytes = 51200
)

func (s *session) truncateOutput(call *trajectory.ToolCall, r result) (result, error) {
	lines := strings.Split(r.output, "\n")
	if len(lines) <= maxOutputLines && len(r.output) <= maxOutputBytes {
		r.metadata = append(r.metadata, jkv{"truncated", false})
		return r, nil
	}
	var kept []string
	size, cut := 0, false
	for i := 0; i < len(lines) && i < maxOutputLines; i++ {
		n := len(lines[i])
		if i > 0 {
			n++
		}
		if size+n > maxOutputBytes {
			cut = true
			break
		}
		kept = append(kept, lines[i])
		size += n
	}
	removed, unit := len(lines)-len(kept), "lines"
	if cut {
		removed, unit = len(r.output)-size, "bytes"
	}
	path, err := s.saveOutput(call.ID, r.output)
	if err != nil {
		return r, err
	}
	r.output = strings.Join(kept, "\n") + "\n\n..." + strconv.Itoa(removed) + " " + unit + " truncated...\n\n" +
		"The tool call succeeded but the output was truncated. Full output saved to: " + path + "\n" +
		"Use the Task tool to have explore agent process this file with Grep and Read (with offset/limit). " +
		"Do NOT read the full file yourself - delegate to save context."
	r.metadata = append(r.metadata, jkv{"truncated", true}, jkv{"outputPath", path})
	r.logPath = path
	return r, nil
}

// saveOutput keeps a full output that OpenCode would have written to its
// tool-output directory; the replay keeps it with the logs.
func (s *session) saveOutput(callID, text string) (string, error) {
	dir := s.env.LogDir
	if dir == "" {
		dir = os.TempDir()
	}
	p := filepath.Join(dir, s.logName(callID)+".output")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		return "", err
	}
	return p, nil
}

var unsafeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]+`) })

func (s *session) logName(callID string) string {
	s.mu.Lock()
	s.nlog++
	n := s.nlog
	s.mu.Unlock()
	id := unsafeName().ReplaceAllString(callID, "_")
	if len(id) > 80 {
		id = id[:80]
	}
	return fmt.Sprintf("%03d-%s", n, id)
}

// mapPath moves a path under the recorded cwd to the workspace.
func (s *session) mapPath(p string) string {
	o := s.env.OriginalCwd
	if o == "" || o == s.env.Workspace || p == "" {
		return p
	}
	o = filepath.Clean(o)
	if p == o {
		return s.cwd
	}
	if strings.HasPrefix(p, o+"/") {
		return s.cwd + p[len(o):]
	}
	return p
}

// mapText replaces the recorded cwd where it starts a path inside free
// text (a shell command, a patch header).
func (s *session) mapText(t string) string {
	o := s.env.OriginalCwd
	if o == "" || o == s.env.Workspace {
		return t
	}
	o = filepath.Clean(o)
	var b strings.Builder
	for {
		i := strings.Index(t, o)
		if i < 0 {
			b.WriteString(t)
			return b.String()
		}
		end := i + len(o)
		if end == len(t) || strings.IndexByte("/ \t\n'\";:)|&><`", t[end]) >= 0 {
			b.WriteString(t[:i] + s.cwd)
		} else {
			b.WriteString(t[:end])
		}
		t = t[end:]
	}
}

// resolve makes a tool path absolute the way the tools do: relative paths
// are joined to the session directory.
func (s *session) resolve(p string) string {
	p = s.mapPath(p)
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.cwd, p)
}

// rel is path.relative(worktree, p) with forward slashes.
func (s *session) rel(p string) string {
	r, err := filepath.Rel(s.worktree, p)
	if err != nil {
		return p
	}
	if r == "." {
		return ""
	}
	return filepath.ToSlash(r)
}

// worktreeOf is the git top level above dir; OpenCode uses "/" for a
// directory outside any repository.
func worktreeOf(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			return "/"
		}
	}
}

// shellFor picks the shell the bash tool spawns: $SHELL unless it is one
// OpenCode refuses (fish, nu), else bash, else /bin/sh.
func shellFor(env []string) string {
	sh := envValue(env, "SHELL")
	if sh != "" {
		base := filepath.Base(sh)
		if base != "fish" && base != "nu" {
			if _, err := os.Stat(sh); err == nil {
				return sh
			}
		}
	}
	if p := lookPath("bash", env); p != "" {
		return p
	}
	return "/bin/sh"
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// lookPath finds a program on the tools' PATH (falling back to pvisor's).
func lookPath(name string, env []string) string {
	if path := envValue(env, "PATH"); path != "" {
		for _, dir := range filepath.SplitList(path) {
			p := filepath.Join(dir, name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				return p
			}
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

// neverRan reports the recorded errors of calls whose tool did not run to
// completion: a permission the user rejected or a rule denied, arguments
// that failed the tool's schema, an abort.
func neverRan(msg string) bool {
	switch {
	case strings.HasPrefix(msg, "The user rejected permission to use this specific tool call"),
		strings.HasPrefix(msg, "The user has specified a rule which prevents you from using this specific tool call"),
		strings.HasPrefix(msg, "The ") && strings.Contains(msg, " tool was called with invalid arguments: "),
		msg == "Tool execution aborted", msg == "Cancelled":
		return true
	}
	return false
}

// toolError is a failure OpenCode reports as the part's state.error.
func toolError(msg string) result { return result{output: msg, isError: true} }

// platformError is the message of the Effect FileSystem error OpenCode
// surfaces for an I/O failure, e.g. "NotFound: FileSystem.readFile (/p)".
func platformError(method, path string, err error) string {
	reason := "Unknown"
	switch run.KindOf(err) {
	case run.NotFound:
		reason = "NotFound"
	case run.PermissionDenied:
		reason = "PermissionDenied"
	case run.IsDir, run.NotDir:
		reason = "BadResource"
	default:
		if errors.Is(err, os.ErrNotExist) {
			reason = "NotFound"
		} else if errors.Is(err, os.ErrPermission) {
			reason = "PermissionDenied"
		}
	}
	return reason + ": FileSystem." + method + " (" + path + ")"
}

// jsonValue is a JSON text to embed as a value.
type jsonValue string

// jobj is a JSON object that keeps its key order and encodes like
// JSON.stringify.
type jobj []jkv

type jkv struct {
	k string
	v any
}

func (o jobj) has(k string) bool {
	for _, e := range o {
		if e.k == k {
			return true
		}
	}
	return false
}

func (o jobj) json() []byte {
	var b bytes.Buffer
	encodeJS(&b, o)
	return b.Bytes()
}

func encodeJS(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		writeJSString(b, v)
	case int:
		b.WriteString(strconv.Itoa(v))
	case *int:
		if v == nil {
			b.WriteString("null")
		} else {
			b.WriteString(strconv.Itoa(*v))
		}
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.RawMessage:
		stringifyJS(b, gjson.ParseBytes(v), 0, 0)
	case jsonValue:
		stringifyJS(b, gjson.Parse(string(v)), 0, 0)
	case jobj:
		b.WriteByte('{')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSString(b, e.k)
			b.WriteByte(':')
			encodeJS(b, e.v)
		}
		b.WriteByte('}')
	case []string:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSString(b, e)
		}
		b.WriteByte(']')
	case []jobj:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			encodeJS(b, e)
		}
		b.WriteByte(']')
	default:
		panic(fmt.Sprintf("encodeJS: %T", v))
	}
}
