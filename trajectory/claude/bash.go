package claude

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

// Bash timeouts, in milliseconds: the default when the call has none and
// the cap on what a call may ask for.
const (
	bashDefaultTimeout = 120000
	bashMaxTimeout     = 600000
)

// Claude Code keeps a tool result in the transcript only up to this many
// characters; a longer one is saved to a file and replaced by a preview.
const (
	bashPersistThreshold = 30000
	persistPreview       = 2000
	errorKeep            = 5000 // head and tail kept of an error over 10000 characters
)

// bashNative is Bash's toolUseResult, keys in the CLI's order.
type bashNative struct {
	Stdout                    string `json:"stdout"`
	Stderr                    string `json:"stderr"`
	Interrupted               bool   `json:"interrupted"`
	IsImage                   bool   `json:"isImage"`
	ReturnCodeInterpretation  string `json:"returnCodeInterpretation,omitempty"`
	NoOutputExpected          *bool  `json:"noOutputExpected,omitempty"`
	DangerouslyDisableSandbox *bool  `json:"dangerouslyDisableSandbox,omitempty"`
	PersistedOutputPath       string `json:"persistedOutputPath,omitempty"`
	PersistedOutputSize       *int   `json:"persistedOutputSize,omitempty"`
	StaleReadFileStateHint    string `json:"staleReadFileStateHint,omitempty"`
}

func (s *toolSession) bash(ctx context.Context, step int, call *trajectory.ToolCall, in gjson.Result) (toolResult, error) {
	command := in.Get("command").Str
	timeout := bashDefaultTimeout
	if t := in.Get("timeout"); t.Type == gjson.Number && t.Num > 0 {
		timeout = int(math.Min(t.Num, bashMaxTimeout))
	}
	modern := s.style.modern()
	logPath := s.logFile(step, "bash")
	req := run.ShellRequest{
		Command: command,
		Timeout: time.Duration(timeout) * time.Millisecond,
		LogPath: logPath,
		// Claude Code 2.1 sends both streams to one output file; earlier
		// versions kept them apart and appended stderr to stdout.
		MergeStderr: modern,
	}
	started := time.Now().UnixMilli() / 1000 * 1000
	r, err := s.shell.Shell(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return toolResult{}, ctx.Err()
		}
		return toolResult{}, fmt.Errorf("claude: running Bash call %s: %w", call.ID, err)
	}
	if r.LogErr != nil {
		return toolResult{}, fmt.Errorf("claude: writing log of Bash call %s: %w", call.ID, r.LogErr)
	}
	code := r.ExitCode
	stdout, stderr := outputText(r.Stdout), outputText(r.Stderr)
	if modern {
		stdout = outputText(r.Combined)
	}
	if r.TimedOut {
		// The CLI kills a command at its timeout with SIGTERM and reports
		// 143 with a note before the output (2.1 moves a simple command to
		// the background instead when background tasks are enabled; a
		// replay has no background to move it to).
		code = 143
		note := "Command timed out after " + jsDuration(timeout)
		if stdout != "" {
			stdout = note + "\n" + stdout
		} else {
			stdout = note
		}
	}
	// Claude Code resets the shell to the project directory when a command
	// leaves it, and tells the model so.
	var reset string
	if cwd := s.shell.Cwd(); cwd != s.ws && !strings.HasPrefix(cwd, s.ws+"/") {
		if err := s.shell.SetCwd(s.ws); err != nil {
			return toolResult{}, err
		}
		reset = "Shell cwd was reset to " + s.orig
	}
	res := toolResult{exit: &code, logPath: logPath}
	isErr, interp := exitSemantics(command, code)
	if isErr {
		res.isError = true
		res.content = bashError(s.style.is(s.style.exitPrefix, true), code, stdout, stderr)
		res.native = "Error: " + res.content
		return res, nil
	}
	var out string
	if modern {
		out = stripBlankLines(jsstr.TrimEnd(stdout) + "\n")
	} else {
		out = stripBlankLines(jsstr.TrimEnd(stdout) + "\n" + jsstr.TrimEnd(stderr) + "\n")
	}
	nat := bashNative{Stdout: out, ReturnCodeInterpretation: interp}
	if reset != "" {
		nat.Stderr = "\n" + reset
	}
	if modern {
		v := noOutputExpected(command)
		nat.NoOutputExpected = &v
	}
	if d := in.Get("dangerouslyDisableSandbox"); d.IsBool() {
		v := d.Bool()
		nat.DangerouslyDisableSandbox = &v
	}
	if modern && formatterCommand().MatchString(command) {
		nat.StaleReadFileStateHint = s.staleReads(started)
	}
	res.native = nat
	content := leadingBlankLines().ReplaceAllString(out, "")
	content = jsstr.TrimEnd(content)
	parts := []string{}
	for _, p := range []string{content, jsstr.Trim(nat.Stderr), nat.StaleReadFileStateHint} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	res.content = strings.Join(parts, "\n")
	if res.content == "" && s.style.is(s.style.emptyNote, true) {
		res.content = bashNoOutput
	}
	if jsstr.Len(res.content) > bashPersistThreshold {
		res.content = s.persisted(call, res.content, logPath)
	}
	return res, nil
}

var leadingBlankLines = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:[\s\x{feff}]*\n)+`) })

// formatterCommand matches the commands after which Claude Code 2.1 checks
// whether files the agent has read were rewritten (formatters, --fix).
var formatterCommand = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`--write|--fix|--in-place|--auto-correct|\brun\s+format\b|\brun\s+fix\b|` +
		`\b(yarn|pnpm)\s+format\b|\blint:file\b|\blint:fix\b|\bblack\b|\bisort\b|\bruff\s+format\b|\bcargo\s+(fmt|fix)\b|` +
		`\brustfmt\b|\bgo\s+fmt\b|\bterraform\s+fmt\b|\bdprint\s+fmt\b|\bswiftformat\b|\bphpcbf\b`)
})

// staleReads is the note Claude Code adds when a formatter-like command
// rewrote files the agent has read since the command started.
func (s *toolSession) staleReads(started int64) string {
	type hit struct {
		path string
		seq  int
	}
	var hits []hit
	for p, st := range s.files {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if m := fi.ModTime().UnixMilli(); m > started && m > st.timestamp {
			hits = append(hits, hit{p, st.seq})
		}
	}
	if len(hits) == 0 {
		return ""
	}
	sort.Slice(hits, func(i, j int) bool { return hits[i].seq > hits[j].seq })
	var names []string
	for _, h := range hits[:min(5, len(hits))] {
		rel, err := filepath.Rel(s.shell.Cwd(), h.path)
		if err != nil || rel == "" {
			rel = s.recorded(h.path)
		}
		names = append(names, rel)
	}
	more := ""
	if len(hits) > 5 {
		more = fmt.Sprintf(" and %d more", len(hits)-5)
	}
	return fmt.Sprintf("[This command modified %d %s you've previously read: %s%s. Call Read before editing.]",
		len(hits), plural(len(hits), "file"), strings.Join(names, ", "), more)
}

// outputText is a captured stream as the CLI decodes it; a stream that
// outgrew the capture keeps its head and tail, joined.
func outputText(o run.Output) string {
	return validUTF8(o.Data)
}

// bashError formats a failed command the way the CLI reports the error it
// throws: "Exit code N", then the output (2.1: one merged stream; earlier:
// stderr, then stdout), trimmed, and cut in the middle when long.
func bashError(withCode bool, code int, stdout, stderr string) string {
	var parts []string
	if withCode {
		parts = append(parts, "Exit code "+strconv.Itoa(code))
	}
	for _, p := range []string{stderr, stdout} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	msg := jsstr.Trim(strings.Join(parts, "\n"))
	if msg == "" {
		msg = "Command failed with no output"
	}
	if n := jsstr.Len(msg); n > 2*errorKeep {
		head := jsstr.Prefix(msg, errorKeep)
		tail := jsstr.SliceFrom(msg, n-errorKeep)
		msg = fmt.Sprintf("%s\n\n... [%d characters truncated] ...\n\n%s", head, n-jsstr.Len(head)-jsstr.Len(tail), tail)
	}
	return msg
}

// stripBlankLines drops leading and trailing lines that are blank.
func stripBlankLines(s string) string {
	lines := strings.Split(s, "\n")
	i, j := 0, len(lines)-1
	for i < len(lines) && jsstr.Trim(lines[i]) == "" {
		i++
	}
	for j >= 0 && jsstr.Trim(lines[j]) == "" {
		j--
	}
	if i > j {
		return ""
	}
	return strings.Join(lines[i:j+1], "\n")
}

// persisted is the preview Claude Code keeps of a result too large for the
// transcript. The full text goes to <project>/<session>/tool-results/<id>.txt
// in the CLI's config directory; the replay reuses the path the recorded
// session named and keeps the full text in the call's log.
func (s *toolSession) persisted(call *trajectory.ToolCall, content, logPath string) string {
	path := ""
	if call.Observation != nil {
		if m := savedTo().FindStringSubmatch(call.Observation.Content); m != nil {
			path = m[1]
		}
	}
	if path == "" && s.style.toolResults != "" {
		path = s.style.toolResults + "/" + call.ID + ".txt"
	}
	if path == "" {
		path = logPath
	}
	if path != "" {
		s.style.toolResults = filepath.Dir(path)
	}
	preview, more := content, false
	if jsstr.Len(content) > persistPreview {
		cut := jsstr.Prefix(content, persistPreview)
		if i := strings.LastIndexByte(cut, '\n'); i >= 0 && jsstr.Len(cut[:i]) > persistPreview/2 {
			cut = cut[:i]
		}
		preview, more = cut, true
	}
	var b strings.Builder
	b.WriteString("<persisted-output>\n")
	fmt.Fprintf(&b, "Output too large (%s). Full output saved to: %s\n\n", jsSize(jsstr.Len(content)), path)
	fmt.Fprintf(&b, "Preview (first %s):\n", jsSize(persistPreview))
	b.WriteString(preview)
	if more {
		b.WriteString("\n...\n")
	} else {
		b.WriteString("\n")
	}
	b.WriteString("</persisted-output>")
	return b.String()
}

var savedTo = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`Full output saved to: ([^\n]+)\n`) })

// exitSemantics says whether an exit code is a failure for the command the
// way Claude Code reads it: grep, rg, find, diff, test and "[" (and git
// diff/grep) exit 1 to report a result, not a failure.
func exitSemantics(command string, code int) (isError bool, interp string) {
	segs := splitCommand(command)
	last := command
	if len(segs) > 0 {
		last = segs[len(segs)-1]
	}
	word := firstWord(last)
	one := map[string]string{
		"grep": "No matches found", "rg": "No matches found", "egrep": "No matches found", "fgrep": "No matches found",
		"find": "Some directories were inaccessible", "diff": "Files differ",
		"test": "Condition is false", "[": "Condition is false",
	}
	if word == "git" {
		switch gitSubcommand(last) {
		case "diff":
			one = map[string]string{"git": "Files differ"}
		case "grep":
			one = map[string]string{"git": "No matches found"}
		}
	}
	if msg, ok := one[word]; ok {
		if code == 1 {
			return false, msg
		}
		return code >= 2, ""
	}
	if code != 0 {
		return true, "Command failed with exit code " + strconv.Itoa(code)
	}
	return false, ""
}

func firstWord(s string) string {
	f := strings.FieldsFunc(jsstr.Trim(s), jsstr.IsSpace)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func gitSubcommand(s string) string {
	f := strings.FieldsFunc(jsstr.Trim(s), jsstr.IsSpace)
	for i := 1; i < len(f); i++ {
		if strings.HasPrefix(f[i], "-") {
			if f[i] == "-C" || f[i] == "-c" {
				i++
			}
			continue
		}
		return f[i]
	}
	return ""
}

// noOutputExpected is set when every command of the line is one that
// prints nothing on success (mv, cp, rm, mkdir, cd, …).
func noOutputExpected(command string) bool {
	quiet := map[string]bool{"mv": true, "cp": true, "rm": true, "mkdir": true, "rmdir": true, "chmod": true,
		"chown": true, "chgrp": true, "touch": true, "ln": true, "cd": true, "export": true, "unset": true, "wait": true}
	any := false
	for _, seg := range splitCommand(command) {
		w := firstWord(seg)
		if w == "" {
			continue
		}
		any = true
		if !quiet[w] {
			return false
		}
	}
	return any
}

// splitCommand splits a command line into its simple commands at the
// control operators (&&, ||, ;, |, &, newline) outside quotes.
func splitCommand(cmd string) []string {
	var segs []string
	var cur strings.Builder
	flush := func() {
		if t := jsstr.Trim(cur.String()); t != "" {
			segs = append(segs, t)
		}
		cur.Reset()
	}
	var quote byte
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' && i+1 < len(cmd) {
				cur.WriteByte(c)
				i++
				c = cmd[i]
			} else if c == quote {
				quote = 0
			}
		case c == '\\' && i+1 < len(cmd):
			cur.WriteByte(c)
			i++
			c = cmd[i]
		case c == '\'' || c == '"':
			quote = c
		case c == ';' || c == '\n':
			flush()
			continue
		case c == '&' || c == '|':
			// Redirections such as 2>&1 and >| are not separators.
			if i > 0 && (cmd[i-1] == '>' || cmd[i-1] == '<') {
				break
			}
			if i+1 < len(cmd) && cmd[i+1] == '>' {
				break
			}
			flush()
			if i+1 < len(cmd) && cmd[i+1] == c {
				i++
			}
			continue
		}
		cur.WriteByte(c)
	}
	flush()
	return segs
}

// jsDuration formats milliseconds as the CLI does ("2m 0s", "45s").
func jsDuration(ms int) string {
	if ms < 60000 {
		if ms == 0 {
			return "0s"
		}
		return strconv.Itoa(ms/1000) + "s"
	}
	d := ms / 86400000
	h := ms % 86400000 / 3600000
	m := ms % 3600000 / 60000
	sec := int(math.Round(float64(ms%60000) / 1000))
	if sec == 60 {
		sec, m = 0, m+1
	}
	if m == 60 {
		m, h = 0, h+1
	}
	if h == 24 {
		h, d = 0, d+1
	}
	switch {
	case d > 0:
		return fmt.Sprintf("%dd %dh %dm", d, h, m)
	case h > 0:
		return fmt.Sprintf("%dh %dm %ds", h, m, sec)
	}
	return fmt.Sprintf("%dm %ds", m, sec)
}
