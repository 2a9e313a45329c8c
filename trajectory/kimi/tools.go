package kimi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
)

// The tools are re-run as Kimi Code 2.1.0 runs them (its agent-core-v2
// tools: bash, glob and grep over ripgrep, read, write, edit), producing
// the raw result {output, note, isError, durationMs} the wire log records;
// the model-visible text is renderResult of it.

var _ trajectory.Replayer = format{}

// replayTools are the tools re-run (CheckReplayable refuses the others:
// subagents, background tasks, questions to a person, the network).
var replayTools = []string{"Bash", "Glob", "Grep", "Read", "Write", "Edit"}

// vcsDirs and sensitiveGlobs are what Kimi's glob and grep leave out.
var (
	vcsDirs        = []string{".git", ".svn", ".hg", ".bzr", ".jj", ".sl"}
	sensitiveGlobs = []string{"**/.env", "**/id_rsa", "**/id_ed25519", "**/id_ecdsa", "**/.aws/credentials"}
)

// defaultBashTimeout is Kimi's foreground default (60 s) unless the engine
// sets one.
const defaultBashTimeout = 60 * time.Second

type session struct {
	env  trajectory.ToolEnv
	ws   string // where the tools run
	orig string // the recorded cwd
	r    *run.Runner
	rg   string
}

// rawResult is a tool.result's result object as Kimi writes it.
type rawResult struct {
	Output     string `json:"output"`
	Note       string `json:"note,omitempty"`
	IsError    bool   `json:"isError,omitempty"`
	DurationMs int64  `json:"durationMs"`
}

func (format) NewToolSession(env trajectory.ToolEnv) (trajectory.ToolSession, error) {
	ws, err := env.Dirs(AgentName)
	if err != nil {
		return nil, err
	}
	s := &session{env: env, ws: filepath.Clean(ws), orig: filepath.Clean(ws)}
	if env.OriginalCwd != "" {
		s.orig = filepath.Clean(env.OriginalCwd)
	}
	procEnv := env.Env
	if procEnv == nil {
		procEnv = []string{}
	}
	s.r, err = run.NewRunner(run.Options{Env: procEnv, Shell: []string{"/bin/bash", "-c"}, Isolation: env.Isolation})
	if err != nil {
		return nil, fmt.Errorf("kimi: %w", err)
	}
	return s, nil
}

func (s *session) Close() error { return s.r.Close() }

// path maps a call's path (relative to the cwd, or absolute under the
// recorded cwd) into the workspace.
func (s *session) path(p string) string {
	if !filepath.IsAbs(p) {
		return filepath.Join(s.ws, p)
	}
	if rel, err := filepath.Rel(s.orig, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return filepath.Join(s.ws, rel)
	}
	return p
}

func (s *session) Execute(ctx context.Context, step int, call *trajectory.ToolCall) (trajectory.Fresh, error) {
	start := time.Now()
	args := gjson.ParseBytes(call.Arguments)
	var res rawResult
	var exit *int
	var err error
	switch call.Name {
	case "Bash":
		res, exit, err = s.bash(ctx, args)
	case "Glob":
		res, err = s.glob(ctx, args)
	case "Grep":
		res, err = s.grep(ctx, args)
	case "Read":
		res, err = s.read(args)
	case "Write":
		res = s.write(args)
	case "Edit":
		res, err = s.edit(args)
	default:
		return trajectory.Fresh{}, fmt.Errorf("kimi: %s is not re-run", call.Name)
	}
	if err != nil {
		return trajectory.Fresh{}, err
	}
	d := time.Since(start)
	res.DurationMs = d.Milliseconds()
	native, _ := json.Marshal(res)
	return trajectory.Fresh{Content: renderResult(call.Name, gjson.ParseBytes(native)), IsError: res.IsError,
		Native: native, ExitCode: exit, Duration: d}, nil
}

// bash runs the command in the cwd (or its own cwd argument) with stdout
// and stderr interleaved, as Kimi's process task does.
func (s *session) bash(ctx context.Context, args gjson.Result) (rawResult, *int, error) {
	timeout := defaultBashTimeout
	if t := args.Get("timeout"); t.Exists() {
		timeout = time.Duration(t.Float() * float64(time.Second))
	} else if s.env.DefaultTimeout > 0 {
		timeout = s.env.DefaultTimeout
	}
	dir := s.ws
	if c := args.Get("cwd").Str; c != "" {
		dir = s.path(c)
	}
	cmd := args.Get("command").Str
	if strings.TrimSpace(cmd) == "" {
		return rawResult{Output: "Command cannot be empty.", IsError: true}, nil, nil
	}
	r, err := s.r.Shell(ctx, run.ShellRequest{Command: cmd, Dir: dir, Timeout: timeout})
	if err != nil {
		return rawResult{}, nil, fmt.Errorf("kimi: bash: %w", err)
	}
	out := string(r.Combined.Data)
	exit := r.ExitCode
	switch {
	case r.TimedOut:
		return failed(out, "Command killed by timeout ("+strconv.Itoa(int(timeout.Seconds()))+"s)"), &exit, nil
	case r.ExitCode == 0:
		if out == "" {
			out = "Command executed successfully."
		}
		return rawResult{Output: out}, &exit, nil
	}
	if out == "" {
		out = "Process exited with code " + strconv.Itoa(r.ExitCode)
	}
	return failed(out, "Command failed with exit code: "+strconv.Itoa(r.ExitCode)+"."), &exit, nil
}

// failed joins output and message as Kimi's output accumulator does.
func failed(out, msg string) rawResult {
	switch {
	case out == "":
		return rawResult{Output: msg, IsError: true}
	case strings.HasSuffix(out, "\n"):
		return rawResult{Output: out + msg, IsError: true}
	}
	return rawResult{Output: out + "\n" + msg, IsError: true}
}

func (s *session) ripgrep(ctx context.Context, dir string, argv []string) (run.ShellResult, error) {
	return s.r.Shell(ctx, run.ShellRequest{Argv: append([]string{"rg"}, argv...), Dir: dir, Timeout: time.Minute})
}

// glob lists files as `rg --files --hidden --sortr=modified`, newest first,
// relative to the search root; 100 at most.
func (s *session) glob(ctx context.Context, args gjson.Result) (rawResult, error) {
	root := s.ws
	if p := args.Get("path").Str; p != "" {
		root = s.path(p)
	}
	argv := []string{"--files", "--hidden", "--sortr=modified"}
	for _, d := range vcsDirs {
		argv = append(argv, "--glob", "!"+d)
	}
	argv = append(argv, "--glob", args.Get("pattern").Str)
	for _, g := range sensitiveGlobs {
		argv = append(argv, "--glob", "!"+g)
	}
	r, err := s.ripgrep(ctx, root, append(argv, "."))
	if err != nil {
		return rawResult{}, fmt.Errorf("kimi: glob: %w", err)
	}
	var paths []string
	for _, l := range strings.Split(string(r.Stdout.Data), "\n") {
		if l != "" {
			paths = append(paths, strings.TrimPrefix(l, "./"))
		}
	}
	if len(paths) == 0 {
		return rawResult{Output: "No matches found"}, nil
	}
	footer := ""
	if len(paths) >= 100 {
		paths = paths[:100]
		footer = "\nFound 100 matches"
	}
	return rawResult{Output: strings.Join(paths, "\n") + footer}, nil
}

// grep searches as Kimi's content mode does (CheckReplayable refuses the
// other modes): `path:line:text`, paths relative to the workspace.
func (s *session) grep(ctx context.Context, args gjson.Result) (rawResult, error) {
	argv := []string{"--hidden", "--null"}
	for _, d := range vcsDirs {
		argv = append(argv, "--glob", "!"+d)
	}
	if args.Get("-i").Bool() {
		argv = append(argv, "-i")
	}
	argv = append(argv, "--with-filename")
	if n := args.Get("-n"); !n.Exists() || n.Bool() {
		argv = append(argv, "-n")
	} else {
		argv = append(argv, "--field-context-separator", ":")
	}
	if g := args.Get("glob"); g.Exists() {
		argv = append(argv, "--glob", g.Str)
	}
	if t := args.Get("type"); t.Exists() {
		argv = append(argv, "--type", t.Str)
	}
	for _, g := range sensitiveGlobs {
		argv = append(argv, "--glob", "!"+g)
	}
	target := "."
	if p := args.Get("path").Str; p != "" {
		target = s.path(p)
	}
	r, err := s.ripgrep(ctx, s.ws, append(argv, "--", args.Get("pattern").Str, target))
	if err != nil {
		return rawResult{}, fmt.Errorf("kimi: grep: %w", err)
	}
	if r.ExitCode > 1 {
		return rawResult{Output: "Grep failed: " + strings.TrimSpace(string(r.Stderr.Data)), IsError: true}, nil
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(r.Stdout.Data), "\n"), "\n") {
		if l == "" {
			continue
		}
		file, rest, _ := strings.Cut(l, "\x00")
		if rel, err := filepath.Rel(s.ws, filepath.Join(s.ws, file)); err == nil && !strings.HasPrefix(rel, "..") {
			file = rel
		}
		lines = append(lines, file+":"+rest)
	}
	if len(lines) == 0 {
		return rawResult{Output: "No matches found"}, nil
	}
	return rawResult{Output: strings.Join(lines, "\n")}, nil
}

// maxReadChars is Kimi's default max_chars.
const maxReadChars = 100000

// read renders a whole file as "N\ttext" lines with Kimi's page note
// (CheckReplayable refuses ranges and limits).
func (s *session) read(args gjson.Result) (rawResult, error) {
	p := args.Get("path").Str
	data, err := readCapped(s.path(p))
	if err != nil {
		var re *run.Error
		if errors.Is(err, fs.ErrNotExist) || errors.As(err, &re) && re.Kind == run.NotFound {
			return rawResult{Output: p + " does not exist", IsError: true}, nil
		}
		return failedRead(err)
	}
	text := strings.TrimSuffix(string(data), "\n")
	lines := strings.Split(text, "\n")
	if len(data) == 0 {
		lines = nil
	}
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strconv.Itoa(i+1) + "\t" + strings.TrimSuffix(l, "\r"))
	}
	n := len(lines)
	word := "lines"
	if n == 1 {
		word = "line"
	}
	note := fmt.Sprintf("<system>%d %s read from file starting from line 1. Total lines in file: %d. Requested range complete. Effective max_chars: %d. End of file reached.</system>", n, word, n, maxReadChars)
	if n == 0 {
		note = fmt.Sprintf("<system>No lines read from file. Total lines in file: 0. Requested range complete. Effective max_chars: %d. End of file reached.</system>", maxReadChars)
	}
	return rawResult{Output: b.String(), Note: note}, nil
}

// readCapped reads a regular file of at most run.MaxReadBytes: the
// workspace is as untrusted as the trajectory.
func readCapped(path string) ([]byte, error) {
	data, _, err := run.ReadRegular("read", path)
	return data, err
}

// failedRead is a file error as a tool error, but a file over pvisor's
// cap as a failure of the replay (exit 30): Kimi would have read it.
func failedRead(err error) (rawResult, error) {
	var re *run.Error
	if errors.As(err, &re) && re.Kind == run.TooLarge {
		return rawResult{}, fmt.Errorf("kimi: %w", err)
	}
	return rawResult{Output: err.Error(), IsError: true}, nil
}

func (s *session) write(args gjson.Result) rawResult {
	p, content := args.Get("path").Str, args.Get("content").Str
	target := s.path(p)
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return rawResult{Output: err.Error(), IsError: true}
	}
	flag, verb := os.O_CREATE|os.O_WRONLY|os.O_TRUNC, "Wrote"
	if args.Get("mode").Str == "append" {
		flag, verb = os.O_CREATE|os.O_WRONLY|os.O_APPEND, "Appended"
	}
	f, err := os.OpenFile(target, flag, 0o644)
	if err != nil {
		return rawResult{Output: err.Error(), IsError: true}
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return rawResult{Output: err.Error(), IsError: true}
	}
	return rawResult{Output: fmt.Sprintf("%s %d bytes to %s", verb, len(content), p)}
}

func (s *session) edit(args gjson.Result) (rawResult, error) {
	p := args.Get("path").Str
	oldS, newS, all := args.Get("old_string").Str, args.Get("new_string").Str, args.Get("replace_all").Bool()
	target := s.path(p)
	data, err := readCapped(target)
	if err != nil {
		return failedRead(err)
	}
	n := bytes.Count(data, []byte(oldS))
	switch {
	case oldS == "" || n == 0:
		return rawResult{Output: "old_string not found in " + p, IsError: true}, nil
	case n > 1 && !all:
		return rawResult{Output: fmt.Sprintf("old_string occurs %d times in %s; pass replace_all or a unique old_string", n, p), IsError: true}, nil
	}
	if !all {
		n = 1
	}
	out := bytes.Replace(data, []byte(oldS), []byte(newS), n)
	st, _ := os.Stat(target)
	mode := os.FileMode(0o644)
	if st != nil {
		mode = st.Mode().Perm()
	}
	if err := os.WriteFile(target, out, mode); err != nil {
		return rawResult{Output: err.Error(), IsError: true}, nil
	}
	word := "occurrences"
	if n == 1 {
		word = "occurrence"
	}
	return rawResult{Output: fmt.Sprintf("Replaced %d %s in %s", n, word, p)}, nil
}
