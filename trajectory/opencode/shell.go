package opencode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

// OpenCode's shell tool (registered as "bash").
const (
	defaultBashTimeoutMs = 120000
	shellMetaMax         = 30000 // UTF-16 units of output kept in metadata.output
)

func (s *session) bash(ctx context.Context, call *trajectory.ToolCall, args gjson.Result) (result, error) {
	command := args.Get("command").Str
	timeoutMs := float64(defaultBashTimeoutMs)
	if t := args.Get("timeout"); t.Exists() && t.Type != gjson.Null {
		if t.Type != gjson.Number {
			return toolError("The bash tool was called with invalid arguments: timeout is not a number.\n" +
				"Please rewrite the input so it satisfies the expected schema."), nil
		}
		if t.Num < 0 {
			return toolError("Invalid timeout value: " + jsNumber(t.Num) + ". Timeout must be a positive number."), nil
		}
		timeoutMs = t.Num
	}
	dir := s.cwd
	if w := args.Get("workdir"); w.Type == gjson.String && w.Str != "" {
		dir = s.resolve(w.Str)
	}
	// The running part already holds {output: ""} when the spawn fails, so
	// the error state keeps that metadata.
	running := jobj{{"output", ""}}
	if st, err := os.Stat(dir); err != nil {
		r := toolError(platformError("access", dir, err))
		r.metadata = running
		return r, nil
	} else if !st.IsDir() {
		r := toolError("BadResource: FileSystem.access (" + dir + ")")
		r.metadata = running
		return r, nil
	}
	logPath := ""
	if s.env.LogDir != "" {
		logPath = filepath.Join(s.env.LogDir, s.logName(call.ID)+".log")
	}
	res, err := s.runner.Shell(ctx, run.ShellRequest{
		Command:     s.mapText(command),
		Dir:         dir,
		Timeout:     time.Duration((timeoutMs + 100) * float64(time.Millisecond)),
		LogPath:     logPath,
		MergeStderr: true,
		// The tool resolves when the output streams close, so a background
		// job that keeps them open holds the call, as it did for the agent.
		WaitForEOF: true,
	})
	if err != nil {
		return result{}, err
	}
	if res.LogErr != nil {
		return result{}, res.LogErr
	}
	raw := res.Combined.Data
	total := res.Combined.Total
	if res.Combined.Truncated() {
		raw = dropPartialRune(res.Combined.Tail())
	}
	full := jsstr.Decode(raw)
	// A shell killed by a signal never reports an exit code to OpenCode,
	// which then waits for its timeout and says so.
	timedOut := res.TimedOut || res.Signal != 0
	text, cut := tailLines(full, maxOutputLines, maxOutputBytes)
	truncated := cut || total > maxOutputBytes || res.Combined.Truncated()
	out := text
	if out == "" {
		out = "(no output)"
	}
	if truncated && logPath != "" {
		out = "...output truncated...\n\nFull output saved to: " + logPath + "\n\n" + out
	}
	if timedOut {
		out += "\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout " + jsNumber(timeoutMs) +
			" ms. If this command is expected to take longer and is not waiting for interactive input, " +
			"retry with a larger timeout value in milliseconds.\n</shell_metadata>"
	}
	metaOut := capTail(full)
	if metaOut == "" {
		metaOut = capTail(out)
	}
	r := result{output: out, title: command, logPath: logPath}
	var exit *int
	if !timedOut {
		code := res.ExitCode
		exit = &code
		r.exit = exit
	}
	r.metadata = jobj{{"output", metaOut}, {"exit", exit}, {"truncated", truncated}}
	if truncated && logPath != "" {
		r.metadata = append(r.metadata, jkv{"outputPath", logPath})
	}
	return r, nil
}

// capTail keeps the last 30000 characters of s behind "...\n\n".
func capTail(s string) string {
	if jsstr.Len(s) <= shellMetaMax {
		return s
	}
	return "...\n\n" + jsstr.Suffix(s, shellMetaMax)
}

// tailLines keeps the last maxLines lines of s within maxBytes bytes; a
// single line longer than that keeps its last maxBytes bytes.
func tailLines(s string, maxLines, maxBytes int) (string, bool) {
	lines := strings.Split(s, "\n")
	if len(lines) <= maxLines && len(s) <= maxBytes {
		return s, false
	}
	var kept []string
	n := 0
	for i := len(lines) - 1; i >= 0 && len(kept) < maxLines; i-- {
		u := len(lines[i])
		if len(kept) > 0 {
			u++
		}
		if n+u > maxBytes {
			if len(kept) == 0 {
				b := lines[i]
				l := max(len(b)-maxBytes, 0)
				for l < len(b) && b[l]&0xC0 == 0x80 {
					l++
				}
				kept = append(kept, b[l:])
			}
			break
		}
		kept = append(kept, lines[i])
		n += u
	}
	for a, b := 0, len(kept)-1; a < b; a, b = a+1, b-1 {
		kept[a], kept[b] = kept[b], kept[a]
	}
	return strings.Join(kept, "\n"), true
}
