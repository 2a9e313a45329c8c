package pi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

// The replay runs pi's built-in tools with pi's own semantics (as of
// @mariozechner/pi-coding-agent 0.73): every bash call is a fresh
// `/bin/bash -c` in the session cwd (nothing carries over), with no
// timeout unless the call gives one in seconds; file tools resolve
// relative paths against the session cwd; find and grep run fd and rg
// with pi's arguments. Results are the texts pi returns to the model, and
// the structured `details` pi stores next to them.

var _ trajectory.Replayer = format{}

// piDrainGrace is how long pi still reads output after the shell exited
// while a background process holds the pipes (EXIT_STDIO_GRACE_MS).
const piDrainGrace = 100 * time.Millisecond

// session is one replay's tool state.
type session struct {
	env  trajectory.ToolEnv
	orig string // the recorded cwd: paths in results are shown under it
	ws   string // where the tools run
	home string
	tmp  string // os.tmpdir() of pi: where truncated bash output is kept
	r    *run.Runner

	tools map[string]string // resolved fd/rg paths ("" when absent)
	fdOld bool              // fd older than 8.7: no --no-require-git
	sem   semantics         // the release whose tools are reproduced
}

// result is one tool's outcome before it becomes a Fresh.
type result struct {
	text    string
	details json.RawMessage // nil: pi leaves details undefined
	isError bool
	exit    *int
	// returned marks an isError result the tool returned with its details
	// (Pi ≥ 0.99 for a failed command) rather than threw (details {}).
	returned bool
	log      string // a log the tool wrote itself (bash)
	fatal    error  // the call cannot be replayed (a device, a huge file)
}

func failure(text string) result { return result{text: text, isError: true} }

// NewToolSession starts the tool state of one replay.
func (format) NewToolSession(env trajectory.ToolEnv) (trajectory.ToolSession, error) {
	ws, err := env.Dirs("pi")
	if err != nil {
		return nil, err
	}
	s := &session{env: env, ws: filepath.Clean(ws), orig: filepath.Clean(ws), tools: map[string]string{}}
	if env.OriginalCwd != "" {
		s.orig = filepath.Clean(env.OriginalCwd)
	}
	var minV, beforeV string
	if env.Trajectory != nil {
		minV, beforeV = env.Trajectory.MinVersion, env.Trajectory.BeforeVersion
	}
	s.sem = chooseSemantics(env.Version, env.ContinuingVersion, minV, beforeV)
	s.home, s.tmp = envValue(env.Env, "HOME"), envValue(env.Env, "TMPDIR")
	if s.tmp == "" {
		s.tmp = "/tmp"
	}
	shell := []string{"/bin/bash", "-c"}
	if _, err := os.Stat("/bin/bash"); err != nil {
		shell = []string{"sh", "-c"}
	}
	env2 := env.Env
	if env2 == nil {
		env2 = []string{}
	}
	r, err := run.NewRunner(run.Options{Env: env2, Shell: shell, DrainGrace: piDrainGrace, Isolation: env.Isolation})
	if err != nil {
		return nil, fmt.Errorf("pi: %w", err)
	}
	s.r = r
	return s, nil
}

func (s *session) Close() error { return s.r.Close() }

// Semantics says which Pi release's tools the session reproduces.
func (s *session) Semantics() map[string]any {
	return map[string]any{"agent": "pi", "release": s.sem.Release, "source": s.sem.Source}
}

// Execute runs one call of step.
func (s *session) Execute(ctx context.Context, step int, call *trajectory.ToolCall) (trajectory.Fresh, error) {
	start := time.Now()
	args := gjson.ParseBytes(call.Arguments)
	var orig string
	if call.Observation != nil {
		orig = call.Observation.Content
	}
	logPath := s.logPath(step, call)
	var res result
	var err error
	switch call.Name {
	case "bash":
		res, err = s.bash(ctx, args, logPath, orig)
	case "read":
		res = s.read(args, orig)
	case "write":
		res = s.write(args, orig)
	case "edit":
		res = s.edit(args, orig)
	case "ls":
		res = s.ls(args)
	case "find":
		res, err = s.find(ctx, args, logPath)
	case "grep":
		res, err = s.grep(ctx, args, logPath)
	default:
		return trajectory.Fresh{}, fmt.Errorf("pi: %q is not a built-in tool the replay can run", call.Name)
	}
	if err == nil {
		err = res.fatal
	}
	if err != nil {
		return trajectory.Fresh{}, err
	}
	f := trajectory.Fresh{Content: res.text, IsError: res.isError, Native: res.details,
		ExitCode: res.exit, Duration: time.Since(start)}
	if res.isError && !res.returned {
		f.Native = json.RawMessage(`{}`) // createErrorToolResult: details {}
	}
	if f.Duration <= 0 {
		f.Duration = time.Nanosecond // a Fresh with no duration and no log reads as reused (see Rebuild)
	}
	if res.log != "" {
		f.LogPath = res.log
	} else if logPath != "" {
		if err := os.WriteFile(logPath, []byte(res.text), 0o600); err != nil {
			return f, fmt.Errorf("pi: writing %s: %w", logPath, err)
		}
		f.LogPath = logPath
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

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// unicodeSpaces are the spaces pi turns into ' ' in paths.
var unicodeSpaces = strings.NewReplacer("\u00A0", " ", "\u2000", " ", "\u2001", " ", "\u2002", " ",
	"\u2003", " ", "\u2004", " ", "\u2005", " ", "\u2006", " ", "\u2007", " ", "\u2008", " ",
	"\u2009", " ", "\u200A", " ", "\u202F", " ", "\u205F", " ", "\u3000", " ")

// resolve is pi's resolveToCwd in the recorded cwd: "@" prefix dropped,
// unusual spaces normalized, "~" expanded, relative paths joined to the
// cwd (absolute ones are kept as written). shown is the path pi would
// have put in its messages, real the one the replay touches.
func (s *session) resolve(p string) (shown, real string) {
	p = unicodeSpaces.Replace(strings.TrimPrefix(p, "@"))
	switch {
	case p == "~":
		p = s.home
	case strings.HasPrefix(p, "~/"):
		p = s.home + p[1:]
	}
	if filepath.IsAbs(p) {
		shown = p
	} else {
		shown = filepath.Join(s.orig, p)
	}
	return shown, s.mapPath(shown)
}

// resolveHere is resolve for the file tools pvisor runs in its own
// process (read, write, edit, ls): under --executor container a path
// outside the workspace names the container's file, as it does for bash;
// real is then where this process finds it.
func (s *session) resolveHere(p string) (shown, real string) {
	shown, real = s.resolve(p)
	return shown, run.HostPath(real)
}

// mapPath moves a path under the recorded cwd to the workspace.
func (s *session) mapPath(p string) string {
	if s.orig == s.ws {
		return p
	}
	if p == s.orig {
		return s.ws
	}
	if strings.HasPrefix(p, s.orig+"/") {
		return s.ws + p[len(s.orig):]
	}
	return p
}

// unmapText shows workspace paths in a tool's own message (fd and rg
// errors) under the recorded cwd, as pi printed them.
func (s *session) unmapText(msg string) string {
	if s.orig == s.ws {
		return msg
	}
	return strings.ReplaceAll(msg, s.ws, s.orig)
}

// mapCommand replaces the recorded cwd inside a shell command where it
// stands as a whole path: not inside a longer name on either side.
func (s *session) mapCommand(cmd string) string {
	if s.orig == s.ws || s.orig == "/" || !strings.Contains(cmd, s.orig) {
		return cmd
	}
	nameChar := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-~", c) >= 0
	}
	var b strings.Builder
	for done := 0; ; {
		i := strings.Index(cmd[done:], s.orig)
		if i < 0 {
			b.WriteString(cmd[done:])
			return b.String()
		}
		i += done
		end := i + len(s.orig)
		whole := (i == 0 || !nameChar(cmd[i-1]) && cmd[i-1] != '/') && (end == len(cmd) || !nameChar(cmd[end]))
		b.WriteString(cmd[done:i])
		if whole {
			b.WriteString(s.ws)
		} else {
			b.WriteString(s.orig)
		}
		done = end
	}
}

// exitLegacy matches the result of pi versions that printed only the exit
// status for a failed command without output.
var exitLegacy = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Command exited with code \d+$`) })

// bash runs one command as pi does: `bash -c` in the session cwd, stdout
// and stderr together, the last 2000 lines / 50 KB kept, the full output
// in a temp file when that cut anything, "Command exited with code N"
// appended (and the result an error) for a non-zero exit.
func (s *session) bash(ctx context.Context, args gjson.Result, logPath, orig string) (result, error) {
	req := run.ShellRequest{Command: s.mapCommand(args.Get("command").Str), Dir: s.ws,
		LogPath: logPath, MergeStderr: true}
	var timeoutText string
	if t := args.Get("timeout"); t.Type == gjson.Number && t.Num > 0 {
		req.Timeout = time.Duration(t.Num * float64(time.Second))
		timeoutText = jsstr.Number(t.Num)
	} else if s.env.DefaultTimeout > 0 {
		req.Timeout = s.env.DefaultTimeout
		timeoutText = jsstr.Number(s.env.DefaultTimeout.Seconds())
	}
	res, err := s.r.Shell(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return result{}, ctx.Err()
		}
		if run.KindOf(err) == run.NotFound {
			return failure("Working directory does not exist: " + s.orig + "\nCannot execute bash commands."), nil
		}
		return result{}, fmt.Errorf("pi: bash: %w", err)
	}
	if res.Canceled {
		return result{}, context.Canceled
	}
	if res.LogErr != nil {
		return result{}, fmt.Errorf("pi: bash log: %w", res.LogErr)
	}
	out := shellOutput(res.Combined, s.sem.trailingNewlineLine)
	code := res.ExitCode
	text, details, err := s.formatBash(out, res.TimedOut, logPath)
	if err != nil {
		return result{}, err
	}
	r := result{text: text, details: details, exit: &code, log: logPath}
	switch {
	case res.TimedOut:
		r.text, r.isError = appendStatus(text, "Command timed out after "+timeoutText+" seconds"), true
	case res.Signal != 0 && !s.sem.signalExitCode:
		// Node reports a signal death as code null, which pi before 1.6
		// does not treat as a failure.
	case res.Signal != 0:
		code = 128 + int(res.Signal) // 1.6: the shell's convention (137 for SIGKILL)
		r.text, r.isError, r.returned = appendStatus(text, "Command exited with code "+strconv.Itoa(code)), true, true
	case code != 0:
		if out.text == "" && exitLegacy().MatchString(orig) {
			r.text = ""
		}
		r.text, r.isError = appendStatus(r.text, "Command exited with code "+strconv.Itoa(code)), true
		r.returned = s.sem.failedBashResult
	}
	return r, nil
}

func appendStatus(text, status string) string {
	if text == "" {
		return status
	}
	return text + "\n\n" + status
}

// bashOutput is the decoded output pi's accumulator sees.
type bashOutput struct {
	text         string // all of it, or its tail (from a line start) when capped
	totalLines   int
	totalBytes   int
	lastLineSize int
}

// shellOutput counts lines as pi's truncation does (countedLines; legacy:
// every newline starts one).
func shellOutput(o run.Output, legacy bool) bashOutput {
	if !o.Truncated() {
		text := decodeUTF8(o.Data, true)
		last := text[strings.LastIndexByte(text, '\n')+1:]
		return bashOutput{text: text, totalLines: len(countedLines(text, legacy)), totalBytes: len(text), lastLineSize: len(last)}
	}
	head, rawTail := o.Head(), o.Tail()
	tail := decodeUTF8(rawTail, false)
	last := len(tail) - (strings.LastIndexByte(tail, '\n') + 1)
	if !bytes.Contains(rawTail, []byte{'\n'}) {
		// The last line began before the kept tail: when no newline was
		// dropped either, it runs from the head's last newline on.
		if int64(bytes.Count(head, []byte{'\n'})) == o.Lines {
			last = len(head) - (bytes.LastIndexByte(head, '\n') + 1) + int(o.Omitted) + len(rawTail)
		} else {
			last += int(o.Omitted)
		}
	}
	if i := strings.IndexByte(tail, '\n'); i >= 0 {
		tail = tail[i+1:] // pi's rolling tail starts at a line boundary
	}
	lines := int(o.Lines) + 1
	if !legacy && bytes.HasSuffix(rawTail, []byte{'\n'}) {
		lines-- // the final newline ends the last line
	}
	return bashOutput{text: tail, totalLines: lines, totalBytes: int(o.Total), lastLineSize: last}
}

// formatBash is pi's formatOutput: the kept tail plus a notice, with the
// truncation record and full-output path as details. A timed-out call
// shows nothing for an empty output.
func (s *session) formatBash(out bashOutput, timedOut bool, logPath string) (string, json.RawMessage, error) {
	tr := truncateTail(out.text, defaultMaxLines, defaultMaxBytes, s.sem.trailingNewlineLine)
	truncated := out.totalLines > defaultMaxLines || out.totalBytes > defaultMaxBytes
	by := ""
	if truncated {
		by = tr.TruncatedBy
		if by == "" {
			by = "lines"
			if out.totalBytes > defaultMaxBytes {
				by = "bytes"
			}
		}
	}
	tr.Truncated, tr.TruncatedBy, tr.TotalLines, tr.TotalBytes = truncated, by, out.totalLines, out.totalBytes
	text := tr.Content
	if text == "" && !timedOut {
		text = "(no output)"
	}
	if !truncated {
		return text, nil, nil
	}
	full, err := s.keepFullOutput(logPath)
	if err != nil {
		return "", nil, err
	}
	start, end := tr.TotalLines-tr.OutputLines+1, tr.TotalLines
	switch {
	case tr.LastLinePartial:
		text += fmt.Sprintf("\n\n[Showing last %s of line %d (line is %s). Full output: %s]",
			formatSize(tr.OutputBytes), end, formatSize(out.lastLineSize), full)
	case tr.TruncatedBy == "lines":
		text += fmt.Sprintf("\n\n[Showing lines %d-%d of %d. Full output: %s]", start, end, tr.TotalLines, full)
	default:
		text += fmt.Sprintf("\n\n[Showing lines %d-%d of %d (%s limit). Full output: %s]",
			start, end, tr.TotalLines, formatSize(defaultMaxBytes), full)
	}
	var o jsObject
	o.raw("truncation", string(tr.appendJSON(nil)))
	o.str("fullOutputPath", full)
	return text, o.native(), nil
}

// keepFullOutput copies the call's full output to a pi-bash-<hex>.log in
// the temp directory, where pi keeps it, and returns that path.
func (s *session) keepFullOutput(logPath string) (string, error) {
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", err
	}
	dst := filepath.Join(s.tmp, "pi-bash-"+hex.EncodeToString(id[:])+".log")
	if err := os.MkdirAll(s.tmp, 0o755); err != nil {
		return "", fmt.Errorf("pi: temp dir: %w", err)
	}
	out, err := os.Create(dst)
	if err != nil {
		return "", fmt.Errorf("pi: full output: %w", err)
	}
	if logPath != "" {
		if in, err := os.Open(logPath); err == nil {
			_, err = io.Copy(out, in)
			in.Close()
			if err != nil {
				out.Close()
				return "", fmt.Errorf("pi: full output: %w", err)
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			out.Close()
			return "", fmt.Errorf("pi: full output: %w", err)
		}
	}
	return dst, out.Close()
}
