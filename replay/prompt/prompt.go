// Package prompt is the prompt system shared by resume, fork, batches and
// the boundary prompt of a replay (Sandcastle's model): a prompt is inline
// text or a prompt file; a file's {{KEY}} placeholders are filled from
// --prompt-arg values and built-in arguments, then its !`command`
// expressions are replaced by what the commands print, run inside the
// workspace with the isolation of replayed tools. It also holds the
// completion-signal watcher and the structured-output checks.
//
// The package knows no agent and no command line: callers name their flags
// in Source and map errors to exit codes.
package prompt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	toolrun "github.com/pvisor/pvisor/run"
)

// Arg is one --prompt-arg KEY=VALUE.
type Arg struct {
	Key, Value string
}

// keyPattern is what a placeholder name may be; {{ anything else }} stays
// literal text.
var keyPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// ParseArg splits a --prompt-arg value at its first '='.
func ParseArg(s string) (Arg, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return Arg{}, fmt.Errorf("--prompt-arg %q: expected KEY=VALUE", s)
	}
	if !keyPattern().MatchString(k) {
		return Arg{}, fmt.Errorf("--prompt-arg %q: the key must be letters, digits and '_', not starting with a digit", s)
	}
	return Arg{Key: k, Value: v}, nil
}

// ParseArgs parses every --prompt-arg in order.
func ParseArgs(ss []string) ([]Arg, error) {
	var out []Arg
	for _, s := range ss {
		a, err := ParseArg(s)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// Source is where a prompt comes from: inline Text or a File, never both.
type Source struct {
	Text, File string
	Args       []Arg // --prompt-arg KEY=VALUE, in order
	// TextFlag and FileFlag name the two options in messages (default
	// --prompt and --prompt-file); `pvisor replay` calls them
	// --boundary-user-prompt and --boundary-user-prompt-file.
	TextFlag, FileFlag string
}

func (s Source) flags() (text, file string) {
	text, file = s.TextFlag, s.FileFlag
	if text == "" {
		text = "--prompt"
	}
	if file == "" {
		file = "--prompt-file"
	}
	return text, file
}

// Given reports whether a prompt was asked for at all.
func (s Source) Given() bool { return s.Text != "" || s.File != "" }

// ErrNoPrompt is returned where a prompt is needed and none was given.
var ErrNoPrompt = errors.New("no prompt")

// Check validates the combination of options without reading anything.
func (s Source) Check() error {
	tf, ff := s.flags()
	switch {
	case s.Text != "" && s.File != "":
		return fmt.Errorf("%s and %s are mutually exclusive: pass one", tf, ff)
	case !s.Given():
		return fmt.Errorf("%w: pass %s TEXT or %s FILE", ErrNoPrompt, tf, ff)
	case s.Text != "" && strings.TrimSpace(s.Text) == "":
		return fmt.Errorf("%s must contain a non-whitespace character", tf)
	case s.Text != "" && len(s.Args) > 0:
		return fmt.Errorf("--prompt-arg fills {{KEY}} placeholders of a prompt file; %s text is used as written: use %s", tf, ff)
	}
	seen := map[string]bool{}
	for _, a := range s.Args {
		if !keyPattern().MatchString(a.Key) {
			return fmt.Errorf("--prompt-arg %q: the key must be letters, digits and '_', not starting with a digit", a.Key)
		}
		if seen[a.Key] {
			return fmt.Errorf("--prompt-arg %s is given twice: keep one", a.Key)
		}
		seen[a.Key] = true
	}
	return nil
}

// Expansion is one !`command` that ran, for the result (never its output).
type Expansion struct {
	Command  string        `json:"command"`
	Line     int           `json:"line"`
	ExitCode int           `json:"exit_code"` // -1: it could not run
	Duration time.Duration `json:"-"`
	// DurationMS is Duration for JSON.
	DurationMS int64 `json:"duration_ms"`
}

// Resolved is the final prompt text and how it was made.
type Resolved struct {
	Text       string
	Warnings   []string
	Expansions []Expansion
}

// Digest is how a result names a prompt without holding it: its SHA-256
// (hex) and its length in characters, as the boundary prompt's metadata
// has always recorded them.
func Digest(text string) (sha256Hex string, length int) {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:]), utf8.RuneCountInString(text)
}

// Record describes a resolved prompt for a result, never its text: sha256,
// length, the commands with their lines and exit codes, and the warnings.
func (r Resolved) Record() map[string]any {
	sum, n := Digest(r.Text)
	m := map[string]any{"sha256": sum, "length": n, "expansions": r.Expansions}
	if r.Expansions == nil {
		m["expansions"] = []Expansion{}
	}
	if len(r.Warnings) > 0 {
		m["warnings"] = r.Warnings
	}
	return m
}

// Resolve loads src and expands its commands in workspace with exec:
// Load, then Template.Expand.
func Resolve(ctx context.Context, src Source, b BuiltIns, workspace string, exec Executor) (Resolved, error) {
	t, err := Load(src, b)
	if err != nil {
		return Resolved{}, err
	}
	return t.Expand(ctx, workspace, exec)
}

// Limits of a prompt file and of what its expansions may add.
const (
	// MaxFileBytes bounds a prompt file, as --config bounds a request.
	MaxFileBytes = 1 << 20
	// MaxExpansions bounds the !`command` expressions of one file: they
	// all run at once.
	MaxExpansions = 32
	// MaxTextBytes bounds the expanded prompt.
	MaxTextBytes = 4 << 20
)

// segment is a piece of a loaded prompt: literal text (placeholders
// already filled) or a command to expand.
type segment struct {
	text    string
	command bool
	line    int
}

// Template is a prompt after substitution, before expansion. Loading runs
// nothing, so a caller can check a prompt file before any work starts.
type Template struct {
	segs     []segment
	warnings []string
	name     string // the file, for messages
}

// Load reads src (a file: regular, at most MaxFileBytes) and fills its
// placeholders. Placeholder values are never scanned for !`command`: the
// expressions are found in the file's own text first, and a value that
// lands inside a command is inserted as one shell-quoted word.
func Load(src Source, b BuiltIns) (*Template, error) {
	if err := src.Check(); err != nil {
		return nil, err
	}
	if src.Text != "" {
		return &Template{segs: []segment{{text: src.Text, line: 1}}}, nil
	}
	_, ff := src.flags()
	data, err := readFile(ff, src.File)
	if err != nil {
		return nil, err
	}
	values := map[string]string{}
	for k, v := range b {
		values[k] = v
	}
	for _, a := range src.Args {
		if _, builtin := b[a.Key]; builtin || reserved[a.Key] {
			return nil, fmt.Errorf("--prompt-arg %s: %s is a built-in argument and cannot be overridden (built-ins: %s)", a.Key, a.Key, strings.Join(builtinNames(b), ", "))
		}
		values[a.Key] = a.Value
	}
	t := &Template{name: src.File}
	used := map[string]bool{}
	var missing []string
	size := 0 // bytes of the filled text so far: values may repeat a lot
	fill := func(text string, line int, quote bool) string {
		var sb strings.Builder
		last := 0
		for _, loc := range placeholder().FindAllStringSubmatchIndex(text, -1) {
			if size+sb.Len() > MaxTextBytes {
				break
			}
			sb.WriteString(text[last:loc[0]])
			last = loc[1]
			key := text[loc[2]:loc[3]]
			v, ok := values[key]
			if !ok {
				at := line + strings.Count(text[:loc[0]], "\n")
				hint := fmt.Sprintf("pass --prompt-arg %s=VALUE", key)
				if h, ok := unsetHint[key]; ok {
					hint = "it is a built-in this run has no value for (" + h + ")"
				}
				missing = append(missing, fmt.Sprintf("%s:%d: {{%s}} has no value: %s", src.File, at, key, hint))
				continue
			}
			used[key] = true
			if quote {
				v = shellQuote(v)
			}
			sb.WriteString(v)
		}
		sb.WriteString(text[last:])
		size += sb.Len()
		return sb.String()
	}
	text, last, line := string(data), 0, 1
	for _, loc := range expression().FindAllStringSubmatchIndex(text, -1) {
		if lit := text[last:loc[0]]; lit != "" {
			t.segs = append(t.segs, segment{text: fill(lit, line, false), line: line})
			line += strings.Count(lit, "\n")
		}
		t.segs = append(t.segs, segment{text: fill(text[loc[2]:loc[3]], line, true), command: true, line: line})
		last = loc[1]
	}
	if rest := text[last:]; rest != "" {
		t.segs = append(t.segs, segment{text: fill(rest, line, false), line: line})
	}
	if len(missing) > 0 {
		return nil, errors.New(strings.Join(missing, "; "))
	}
	if size > MaxTextBytes {
		return nil, fmt.Errorf("%s is over %d bytes once its placeholders are filled: use shorter values", src.File, MaxTextBytes)
	}
	if text, ok := t.Text(); ok && strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("%s %s is empty: a prompt must contain a non-whitespace character", ff, src.File)
	}
	if n := len(t.Commands()); n > MaxExpansions {
		return nil, fmt.Errorf("%s has %d !`command` expressions, over the limit of %d that may run at once: combine them", src.File, n, MaxExpansions)
	}
	for _, a := range src.Args {
		if !used[a.Key] {
			t.warnings = append(t.warnings, fmt.Sprintf("--prompt-arg %s is not used by %s (no {{%s}} in it)", a.Key, filepath.Base(src.File), a.Key))
		}
	}
	return t, nil
}

// placeholder is {{KEY}}; expression is !`command` on one line.
var (
	placeholder = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}`) })
	expression  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("!`([^`\n]+)`") })
)

// Commands lists the !`command` expressions, placeholders filled, in order.
func (t *Template) Commands() []string {
	var out []string
	for _, s := range t.segs {
		if s.command {
			out = append(out, s.text)
		}
	}
	return out
}

// Warnings are the problems that do not stop a run (unused arguments).
func (t *Template) Warnings() []string { return append([]string(nil), t.warnings...) }

// Text is the prompt when it has no expressions; ok is false otherwise.
func (t *Template) Text() (text string, ok bool) {
	var b strings.Builder
	for _, s := range t.segs {
		if s.command {
			return "", false
		}
		b.WriteString(s.text)
	}
	return b.String(), true
}

// readFile reads a prompt file: a regular file (a FIFO would hang the read,
// /dev/zero never end) of at most MaxFileBytes.
func readFile(flag, path string) ([]byte, error) {
	return toolrun.ReadUserFile(flag, path, MaxFileBytes, "a prompt file", "pass a text file")
}

// shellQuote makes s one word for sh, whatever it holds.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func builtinNames(b BuiltIns) []string {
	seen := map[string]bool{}
	for k := range b {
		seen[k] = true
	}
	for k := range reserved {
		seen[k] = true
	}
	names := make([]string, 0, len(seen))
	for k := range seen {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
