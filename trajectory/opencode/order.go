package opencode

import (
	"strconv"
	"strings"

	"github.com/pvisor/pvisor/trajectory"
)

// ripgrep's order is unspecified: its threads walk directories in
// parallel, in the order the filesystem lists them, so the same files come
// out in different orders from run to run and from one copy of a tree to
// another, and when a glob or grep stops at 100 results, which ones it
// shows depends on that order too. The recorded result is one such order.
// When it is a result ripgrep could have produced from the fresh files
// (the same entries, or the first 100 of some order of them), the replay
// shows it in that order; otherwise it shows ripgrep's first 100.

// recordedFile is one file of a recorded glob or grep result with the line
// numbers grep listed for it.
type recordedFile struct {
	path  string
	lines []int
}

// recordedResult parses the recorded observation of a glob or grep call,
// paths mapped to the workspace; nil when there is none to follow.
func (s *session) recordedResult(call *trajectory.ToolCall, grep bool) []recordedFile {
	o := call.Observation
	if o == nil || o.IsError || o.Content == "" || o.Content == "No files found" {
		return nil
	}
	var out []recordedFile
	for i, l := range strings.Split(o.Content, "\n") {
		switch {
		case l == "" || strings.HasPrefix(l, "(Result"):
		case grep && i == 0:
			if !strings.HasPrefix(l, "Found ") {
				return nil
			}
		case grep && strings.HasPrefix(l, "  Line "):
			num, _, ok := strings.Cut(l[len("  Line "):], ":")
			n, err := strconv.Atoi(num)
			if !ok || err != nil || len(out) == 0 {
				return nil
			}
			out[len(out)-1].lines = append(out[len(out)-1].lines, n)
		case grep && strings.HasPrefix(l, "/") && strings.HasSuffix(l, ":"):
			out = append(out, recordedFile{path: s.mapPath(strings.TrimSuffix(l, ":"))})
		case !grep && strings.HasPrefix(l, "/"):
			out = append(out, recordedFile{path: s.mapPath(l)})
		}
	}
	return out
}

// orderGlob returns the files to list: the recorded ones when ripgrep
// could have listed them first, else ripgrep's first 100.
func orderGlob(fresh []string, recorded []recordedFile) []string {
	first := fresh[:min(len(fresh), searchLimit)]
	if len(recorded) != len(first) || len(recorded) == 0 {
		return first
	}
	have := map[string]bool{}
	for _, f := range fresh {
		have[f] = true
	}
	out := make([]string, len(recorded))
	for i, r := range recorded {
		if !have[r.path] {
			return first
		}
		delete(have, r.path) // a path listed twice cannot be followed
		out[i] = r.path
	}
	return out
}

// orderGrep returns the matches to list: grouped by file in the recorded
// file order when the recorded result is whole files of the fresh matches
// (the last one possibly cut at the limit), else ripgrep's first 100.
func orderGrep(fresh []match, recorded []recordedFile) []match {
	first := fresh[:min(len(fresh), searchLimit)]
	if len(recorded) == 0 {
		return first
	}
	byFile := map[string][]match{}
	for _, m := range fresh {
		byFile[m.path] = append(byFile[m.path], m)
	}
	var out []match
	for i, r := range recorded {
		ms, ok := byFile[r.path]
		if !ok || len(r.lines) > len(ms) || i < len(recorded)-1 && len(r.lines) != len(ms) {
			return first
		}
		for k, n := range r.lines {
			if ms[k].line != n {
				return first
			}
		}
		delete(byFile, r.path)
		out = append(out, ms[:len(r.lines)]...)
	}
	if len(out) != len(first) {
		return first
	}
	return out
}
