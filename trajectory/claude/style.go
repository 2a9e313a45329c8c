package claude

import (
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// style holds the result shapes that differ between Claude Code versions
// (and, within a version, by server-side feature flags). A ToolSession
// does not know the version that recorded the session, so it reads each
// call's recorded observation before formatting the fresh one: what the
// agent itself wrote in that position is the best evidence of the shape
// it would write now. Anything not yet seen falls back to the era the
// other observations point to, and to the 2.1.197 shapes without any.
//
// Shapes by era, from the CLI's source and the sessions in testdata:
//
//	                    legacy (≤ 2.1.x early)          modern (2.1.197)
//	Read numbering      "     1→line" (6 wide, U+2192)  "1\tline"
//	Read suffix         malware <system-reminder>       none
//	Write/Edit note     none                            " (file state is current …)"
//	Edit result         cat -n snippet of the edit      "… has been updated successfully."
//	Glob paths          absolute                        relative to the cwd
//	Bash empty output   ""                              "(Bash completed with no output)"
//	Bash streams        stdout, then stderr             one merged stream
type style struct {
	era tri // yes = modern, no = legacy

	arrow       tri    // Read/Edit line numbers "     1→"
	readSuffix  string // appended after a Read's numbered lines
	suffixKnown bool
	note        tri // the "(file state is current …)" note on Write/Edit
	editSnippet tri // Edit/Write update results carry a cat -n snippet
	absGlob     tri
	absGrep     tri
	emptyNote   tri // "(Bash completed with no output)"
	exitPrefix  tri // Bash errors start with "Exit code N"

	toolResults string // where the CLI saved results too large to keep
}

type tri int8

const (
	unknown tri = iota
	no
	yes
)

func triOf(b bool) tri {
	if b {
		return yes
	}
	return no
}

// is resolves a shape: what was seen, else what its era implies, else the
// modern value.
func (s *style) is(t tri, modern bool) bool {
	switch {
	case t != unknown:
		return t == yes
	case s.era == no:
		return !modern
	}
	return modern
}

func (s *style) modern() bool { return s.era != no }

func (s *style) setEra(modern bool) {
	if s.era == unknown {
		s.era = triOf(modern)
	}
}

// Shapes that appeared in a known release; the session's recorded version
// (every entry carries it) decides, since the observation text is the same.
var grepTotalLinesSince = [3]int{2, 1, 210} // Grep content mode: toolUseResult.totalLines

// since reports whether the session was recorded by release v or later;
// false when its version is unknown.
func (s *toolSession) since(v [3]int) bool {
	var got [3]int
	parts := strings.SplitN(strings.SplitN(s.env.Version, "-", 2)[0], ".", 3)
	if len(parts) != 3 {
		return false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return false
		}
		got[i] = n
	}
	for i := range got {
		if got[i] != v[i] {
			return got[i] > v[i]
		}
	}
	return true
}

var (
	arrowLine  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ *[0-9]+\x{2192}`) })
	tabLine    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]+[\t:]`) })
	exitPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Exit code -?[0-9]+`) })
)

const (
	stateNote     = " (file state is current in your context \u2014 no need to Read it back)"
	snippetIntro  = " Here's the result of running `cat -n` on a snippet of the edited file:"
	reminderStart = "\n\n<system-reminder>\nWhenever you read a file"
	bashNoOutput  = "(Bash completed with no output)"
)

// learn reads the shape of a recorded observation of tool.
func (s *style) learn(tool, content string, isError bool) {
	if m := savedTo().FindStringSubmatch(content); m != nil {
		s.toolResults = path.Dir(m[1])
	}
	if isError {
		if tool == "Bash" && !strings.HasPrefix(content, "<tool_use_error>") {
			has := exitPrefix().MatchString(content)
			s.exitPrefix = triOf(has)
			if !has {
				s.setEra(false) // before 2.1, errors were the bare output
			}
		}
		return
	}
	switch tool {
	case "Read":
		body := content
		if strings.HasPrefix(body, "<system-reminder>") {
			// A reminder before the content (memory freshness,
			// partial view) or instead of it (empty file).
			if i := strings.Index(body, "</system-reminder>\n\n"); i >= 0 {
				body = body[i+len("</system-reminder>\n\n"):]
			} else {
				return
			}
		}
		switch {
		case arrowLine().MatchString(body):
			s.arrow = yes
			s.setEra(false)
		case tabLine().MatchString(body):
			s.arrow = no
			s.setEra(true)
		default:
			return
		}
		if i := strings.Index(content, reminderStart); i >= 0 {
			s.readSuffix, s.suffixKnown = content[i:], true
		} else {
			s.readSuffix, s.suffixKnown = "", true
		}
	case "Write", "Edit", "MultiEdit":
		switch {
		case strings.Contains(content, snippetIntro):
			s.editSnippet = yes
			s.note = no
			s.setEra(false)
			if i := strings.Index(content, snippetIntro+"\n"); i >= 0 {
				rest := content[i+len(snippetIntro)+1:]
				if arrowLine().MatchString(rest) {
					s.arrow = yes
				} else if tabLine().MatchString(rest) {
					s.arrow = no
				}
			}
		case strings.HasPrefix(content, "File created successfully at: ") ||
			strings.Contains(content, " has been updated successfully"):
			if strings.Contains(content, " has been updated successfully") {
				s.editSnippet = no
			}
			has := strings.HasSuffix(content, stateNote)
			s.note = triOf(has)
			if has {
				s.setEra(true)
			}
		}
	case "Glob":
		if content == "No files found" || content == "" {
			return
		}
		abs := strings.HasPrefix(content, "/")
		s.absGlob = triOf(abs)
		s.setEra(!abs)
	case "Grep":
		body := content
		if strings.HasPrefix(body, "Found ") {
			if i := strings.IndexByte(body, '\n'); i >= 0 {
				body = body[i+1:]
			}
		}
		if body == "" || strings.HasPrefix(body, "No ") || strings.HasPrefix(body, "Found ") {
			return
		}
		s.absGrep = triOf(strings.HasPrefix(body, "/"))
	case "Bash":
		switch content {
		case bashNoOutput:
			s.emptyNote = yes
			s.setEra(true)
		case "":
			s.emptyNote = no
			s.setEra(false)
		}
	}
}
