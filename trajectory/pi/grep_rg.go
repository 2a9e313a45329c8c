package pi

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
)

// grepRg is the grep tool since 1.5.1: ripgrep prints the context lines
// itself (--context N; overlapping windows merge, and nothing follows a
// file's last line), a directory is searched as "." from inside it, only
// the line terminator is stripped, the match limit keeps the last allowed
// match's trailing context and is reported only when a further match
// proves results were cut, and the byte cap counts every line found.
func (s *session) grepRg(ctx context.Context, rg string, args gjson.Result, real string, isDir bool, ctxLines, limit int, logPath string) (result, error) {
	argv := []string{rg, "--no-config", "--json", "--line-number", "--color=never", "--hidden"}
	if args.Get("ignoreCase").Bool() {
		argv = append(argv, "--ignore-case")
	}
	if args.Get("literal").Bool() {
		argv = append(argv, "--fixed-strings")
	}
	if g := args.Get("glob").Str; g != "" {
		argv = append(argv, "--glob", stripDotSlash(g))
	}
	if ctxLines > 0 {
		argv = append(argv, "--context", fmt.Sprint(ctxLines))
	}
	dir, target := s.ws, real
	if isDir {
		dir, target = real, "."
	}
	argv = append(argv, "--", args.Get("pattern").Str, target)
	res, err := s.r.Shell(ctx, run.ShellRequest{Argv: argv, Dir: dir, Timeout: searchTimeout,
		LogPath: logPath, MaxOutput: searchOutputCap, KillBackground: true})
	if err != nil && ctx.Err() != nil {
		return result{}, ctx.Err()
	}
	if res.Canceled {
		return result{}, context.Canceled
	}
	if err != nil {
		if run.KindOf(err) == run.NotFound {
			return failure("Failed to run ripgrep: spawn " + rg + " ENOENT"), nil
		}
		return result{}, fmt.Errorf("pi: grep: %w", err)
	}
	formatPath := func(p string) string {
		if isDir {
			if r, err := filepath.Rel(real, filepath.Join(real, p)); err == nil && r != "" && r != "." && !strings.HasPrefix(r, "..") {
				return filepath.ToSlash(r)
			}
		}
		return filepath.Base(p)
	}
	var lines []string
	outBytes, outCount, matches := 0, 0, 0
	cut, limitHit, limitReached, done := false, false, false, false
	lastFile, trailingEnd := "", 0
	push := func(file string, n int, text string, match bool) {
		lastFile = file
		text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
		text, c := truncateLine(text, grepMaxLineLength)
		cut = cut || c
		line := fmt.Sprintf("%s-%d- %s", formatPath(file), n, text)
		if match {
			line = fmt.Sprintf("%s:%d: %s", formatPath(file), n, text)
		}
		if outBytes-1 <= defaultMaxBytes { // past the cap lines are counted, not kept
			lines = append(lines, line)
		}
		outBytes += len(line) + 1
		outCount++
	}
	for _, raw := range outputLines(res.Stdout.Head()) {
		if done || strings.TrimSpace(raw) == "" {
			continue
		}
		ev := gjson.Parse(raw)
		typ := ev.Get("type").Str
		if typ != "match" && typ != "context" {
			continue
		}
		file, n := rgText(ev.Get("data.path")), ev.Get("data.line_number")
		if file == "" || n.Type != gjson.Number {
			continue
		}
		text, num, match := rgText(ev.Get("data.lines")), int(n.Num), typ == "match"
		if !limitHit {
			push(file, num, text, match)
			if match {
				if matches++; matches >= limit {
					limitHit, trailingEnd = true, num+ctxLines
				}
			}
			continue
		}
		inWindow := file == lastFile && num <= trailingEnd
		if inWindow {
			push(file, num, text, false) // a match in the trailing context shows as context
		}
		if match {
			limitReached = true
		}
		if limitReached && !(inWindow && num < trailingEnd) {
			done = true // pi stops rg here
		}
	}
	if !done && res.ExitCode != 0 && res.ExitCode != 1 {
		msg := s.unmapText(strings.TrimSpace(string(res.Stderr.Data)))
		if msg == "" {
			msg = fmt.Sprintf("ripgrep exited with code %d", res.ExitCode)
		}
		return failure(msg), nil
	}
	if matches == 0 {
		return result{text: "No matches found"}, nil
	}
	tr := truncateHead(strings.Join(lines, "\n"), maxSafeInteger, defaultMaxBytes, false)
	tr.TotalLines, tr.TotalBytes = outCount, outBytes-1
	return grepResult(tr, limitReached, limit, cut), nil
}

// rgText is a ripgrep JSON text: {"text": …}, or {"bytes": base64} for
// bytes that are not UTF-8 (decoded as Node's Buffer.toString does).
func rgText(v gjson.Result) string {
	if t := v.Get("text"); t.Type == gjson.String {
		return t.Str
	}
	if b := v.Get("bytes"); b.Type == gjson.String {
		if raw, err := base64.StdEncoding.DecodeString(b.Str); err == nil {
			return decodeUTF8(raw, false)
		}
	}
	return ""
}

// stripDotSlash drops a leading "./" run from a glob (rg never matches
// one), keeping a leading "!".
func stripDotSlash(g string) string {
	neg := strings.HasPrefix(g, "!")
	rest := strings.TrimPrefix(g, "!")
	for strings.HasPrefix(rest, "./") {
		rest = rest[2:]
	}
	if neg {
		return "!" + rest
	}
	return rest
}
