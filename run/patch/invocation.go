package patch

import (
	"path/filepath"
	"strings"
)

// FromArgv recognises the ways Codex runs apply_patch through a command
// (the `shell` tool's argv, or exec_command's script) and returns the patch
// text and the `cd` directory, if any:
//
//	["apply_patch", PATCH]            (also "applypatch")
//	["bash", "-lc", SCRIPT]           (also -c, and zsh or sh)
//
// where SCRIPT is exactly `apply_patch <<'EOF'\n…\nEOF` or
// `cd DIR && apply_patch <<'EOF'\n…\nEOF` (any delimiter, quoted or not).
// Like Codex, anything before or after those forms means "not a patch".
func FromArgv(argv []string) (text, workdir string, ok bool) {
	switch {
	case len(argv) == 2 && isApplyPatch(argv[0]):
		return argv[1], "", true
	case len(argv) == 3 && isShell(argv[0]) && (argv[1] == "-lc" || argv[1] == "-c"):
		return FromScript(argv[2])
	}
	return "", "", false
}

// FromScript parses a shell script of the forms FromArgv accepts.
func FromScript(script string) (text, workdir string, ok bool) {
	s := strings.TrimLeft(script, " \t\n")
	if rest, ok := strings.CutPrefix(s, "cd "); ok {
		rest = strings.TrimLeft(rest, " \t")
		dir, after, ok := shellWord(rest)
		if !ok {
			return "", "", false
		}
		after = strings.TrimLeft(after, " \t")
		if after, ok = strings.CutPrefix(after, "&&"); !ok {
			return "", "", false
		}
		workdir, s = dir, strings.TrimLeft(after, " \t")
	}
	name, rest, _ := strings.Cut(s, " ")
	if !isApplyPatch(name) {
		return "", "", false
	}
	rest = strings.TrimLeft(rest, " \t")
	rest, ok = strings.CutPrefix(rest, "<<")
	if !ok {
		return "", "", false
	}
	header, body, ok := strings.Cut(strings.TrimLeft(rest, " \t"), "\n")
	if !ok {
		return "", "", false
	}
	delim, tail, ok := shellWord(header)
	if !ok || delim == "" || strings.TrimSpace(tail) != "" {
		return "", "", false
	}
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		if l != delim {
			continue
		}
		if strings.TrimSpace(strings.Join(lines[i+1:], "\n")) != "" {
			return "", "", false // more commands after the heredoc
		}
		return strings.Join(lines[:i], "\n") + "\n", workdir, true
	}
	return "", "", false
}

// shellWord reads one word: 'raw', "plain string" (no expansions) or bare.
func shellWord(s string) (word, rest string, ok bool) {
	if s == "" {
		return "", "", false
	}
	switch q := s[0]; q {
	case '\'', '"':
		end := strings.IndexByte(s[1:], q)
		if end < 0 {
			return "", "", false
		}
		word = s[1 : 1+end]
		if q == '"' && strings.ContainsAny(word, "$`\\") {
			return "", "", false
		}
		return word, s[2+end:], true
	}
	end := strings.IndexAny(s, " \t\n;&|<>")
	if end < 0 {
		end = len(s)
	}
	word = s[:end]
	if strings.ContainsAny(word, "$`\\'\"") {
		return "", "", false
	}
	return word, s[end:], word != ""
}

func isApplyPatch(name string) bool { return name == "apply_patch" || name == "applypatch" }

func isShell(p string) bool {
	switch strings.ToLower(strings.TrimSuffix(filepath.Base(p), ".exe")) {
	case "bash", "zsh", "sh":
		return true
	}
	return false
}
