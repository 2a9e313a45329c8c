package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/run/patch"
	"github.com/pvisor/pvisor/trajectory"
)

// The one-shot shell tools: 0.3x-0.5x `shell` (argv, also container.exec
// and the Responses local_shell_call) and 0.5x-0.12x `shell_command` (a
// script for the user's shell). Both run to completion with a timeout of
// timeout_ms, 10 s by default (codex-rs DEFAULT_EXEC_COMMAND_TIMEOUT_MS).
const defaultShellTimeout = 10 * time.Second

type shellArgs struct {
	Command   []string `json:"command"`
	Workdir   string   `json:"workdir"`
	TimeoutMS *float64 `json:"timeout_ms"`
	// local_shell_call actions name the directory working_directory.
	WorkingDirectory string `json:"working_directory"`
}

type shellCommandArgs struct {
	Command   string   `json:"command"`
	Workdir   string   `json:"workdir"`
	Login     *bool    `json:"login"`
	TimeoutMS *float64 `json:"timeout_ms"`
}

var sandboxRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^failed in sandbox (\S+) with execution error: `) })

// legacyShell runs the argv `shell` tool. Its result is the JSON string
// serde writes for {"output": …, "metadata": {"exit_code": N,
// "duration_seconds": X}} (0.40 corpus: 291 of them), the output being the
// merged stdout/stderr cut by truncateLegacy; a command that could not
// start is "execution error: <io error>" (agentcmd 0.40).
func (s *session) legacyShell(ctx context.Context, call *trajectory.ToolCall) (trajectory.Fresh, error) {
	var a shellArgs
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return trajectory.Fresh{}, fmt.Errorf("%s arguments: %w", call.Name, err)
	}
	if a.Workdir == "" {
		a.Workdir = a.WorkingDirectory
	}
	dir := s.resolveDir(a.Workdir)
	if text, cd, ok := patch.FromArgv(a.Command); ok {
		return s.patchViaShell(text, s.joinDir(dir, cd)), nil
	}
	argv := make([]string, len(a.Command))
	for i, v := range a.Command {
		argv[i] = s.mapText(v)
	}
	timeout := millis(a.TimeoutMS, defaultShellTimeout)
	log := s.logPath(call)
	// Merging the pipes keeps the order in which the command wrote (Codex
	// aggregated both in arrival order). The call ends when the command
	// exits: 0.40 went on reading while a background process held the
	// pipes, with no limit (later versions stop after 2 s), which a
	// replay cannot usefully copy.
	res, err := s.r.Shell(ctx, run.ShellRequest{Argv: argv, Dir: dir, Timeout: timeout, LogPath: log,
		MergeStderr: true})
	if re, ok := spawnFailure(err); ok {
		return trajectory.Fresh{Content: "execution error: " + spawnErrno(re)}, nil
	}
	if err != nil {
		return trajectory.Fresh{}, err
	}
	f := trajectory.Fresh{LogPath: log, Duration: res.Duration}
	text := lossyUTF8(res.Combined.Data)
	if res.TimedOut {
		if s.shapes.shellLegacy() {
			// 0.40 answers a timeout through its sandbox-error path.
			sb := "None"
			if o := call.Observation; o != nil {
				if m := sandboxRe().FindStringSubmatch(o.Content); m != nil {
					sb = m[1]
				}
			}
			f.Content = fmt.Sprintf("failed in sandbox %s with execution error: command timed out", sb)
			return f, nil
		}
		text = fmt.Sprintf("command timed out after %d milliseconds\n", res.Duration.Milliseconds()) + text
		res.ExitCode = 124
	}
	code := res.ExitCode
	f.ExitCode = &code
	if s.shapes.shellLegacy() {
		text = truncateLegacy(text)
	} else {
		text = formatTruncated(text, defaultMaxTokens, s.shapes.execHeader(), approxTokens(int64(len(text))))
	}
	f.Content = execJSON(text, code, res.Duration)
	return f, nil
}

// execJSON is serde's rendering of codex's ExecOutput.
func execJSON(output string, code int, d time.Duration) string {
	return fmt.Sprintf(`{"output":%s,"metadata":{"exit_code":%d,"duration_seconds":%s}}`,
		serdeString(output), code, serdeF32(durationSeconds(d)))
}

// execText is codex's format_exec_output_for_model_freeform:
//
//	Exit code: N
//	Wall time: X seconds        (tenths, Rust's f32 Display: "0", "2.2")
//	Total output lines: N       (only when truncation dropped lines)
//	Output:
//	<text cut to 10000 tokens>
func execText(content string, code int, d time.Duration) string {
	cut := truncateTokens(content, defaultMaxTokens)
	var b strings.Builder
	fmt.Fprintf(&b, "Exit code: %d\nWall time: %s seconds\n", code, rustF32Display(durationSeconds(d)))
	if n := lineCount(content); n != lineCount(cut) {
		fmt.Fprintf(&b, "Total output lines: %d\n", n)
	}
	b.WriteString("Output:\n")
	b.WriteString(cut)
	return b.String()
}

// shellCommand runs a shell_command script with the user's shell.
func (s *session) shellCommand(ctx context.Context, call *trajectory.ToolCall) (trajectory.Fresh, error) {
	var a shellCommandArgs
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return trajectory.Fresh{}, fmt.Errorf("shell_command arguments: %w", err)
	}
	dir := s.resolveDir(a.Workdir)
	if text, cd, ok := patch.FromScript(a.Command); ok {
		return s.patchViaShellCommand(text, s.joinDir(dir, cd)), nil
	}
	log := s.logPath(call)
	res, err := s.r.Shell(ctx, run.ShellRequest{Command: s.mapText(a.Command), Shell: s.shellArgv("", a.Login),
		Dir: dir, Timeout: millis(a.TimeoutMS, defaultShellTimeout), LogPath: log, MergeStderr: true})
	if re, ok := spawnFailure(err); ok {
		return trajectory.Fresh{Content: "execution error: " + spawnErrno(re)}, nil
	}
	if err != nil {
		return trajectory.Fresh{}, err
	}
	text := lossyUTF8(res.Combined.Data)
	code := res.ExitCode
	if res.TimedOut {
		text = fmt.Sprintf("command timed out after %d milliseconds\n", res.Duration.Milliseconds()) + text
		code = 124
	}
	return trajectory.Fresh{Content: execText(text, code, res.Duration), ExitCode: &code, Duration: res.Duration, LogPath: log}, nil
}
