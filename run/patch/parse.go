// Package patch parses and applies the Codex apply_patch format:
//
//	*** Begin Patch
//	*** Add File: path        followed by "+line" lines
//	*** Delete File: path
//	*** Update File: path     optionally followed by "*** Move to: path",
//	@@ optional context line   then chunks of " ", "-", "+" lines,
//	*** End of File            optionally closing a chunk that ends the file
//	*** End Patch
//
// Parsing follows Codex's lenient parser (markers may carry surrounding
// whitespace, a heredoc wrapper <<'EOF' … EOF is stripped) and reports
// errors with Codex's messages and line numbers. Apply locates chunks with
// Codex's fuzzy rules: exact lines, then ignoring trailing whitespace, then
// ignoring surrounding whitespace, then also folding typographic dashes,
// quotes and spaces to ASCII.
package patch

import (
	"fmt"
	"strings"
)

// Op is what a hunk does to its file.
type Op int

const (
	Add Op = iota
	Delete
	Update
)

func (o Op) String() string {
	switch o {
	case Add:
		return "add"
	case Delete:
		return "delete"
	case Update:
		return "update"
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// Patch is a parsed patch.
type Patch struct {
	Hunks []Hunk
}

// Hunk is one file operation.
type Hunk struct {
	Op       Op
	Path     string  // as written in the patch
	MoveTo   string  // Update: "*** Move to:" destination, as written
	Contents string  // Add: the file's content (every "+" line plus "\n")
	Chunks   []Chunk // Update
	Line     int     // line of the hunk header, counted as Codex counts (Begin Patch is 1)
}

// Chunk is one located replacement inside an Update hunk.
type Chunk struct {
	Context    string // the "@@ <context>" line that must precede Old
	HasContext bool
	Old        []string // context and removed lines, in order
	New        []string // context and added lines, in order
	EOF        bool     // "*** End of File": Old must end the file
}

// ParseError is a patch that cannot be parsed. Line is 0 for errors about
// the patch as a whole (its Begin/End markers).
type ParseError struct {
	Line int
	Msg  string
}

// Error uses Codex's wording: "invalid patch: …" or "invalid hunk at line
// N, …". (The apply_patch executable prints "Invalid patch: …" and
// "Invalid patch hunk on line N: …" to stderr; format from Line and Msg.)
func (e *ParseError) Error() string {
	if e.Line == 0 {
		return "invalid patch: " + e.Msg
	}
	return fmt.Sprintf("invalid hunk at line %d, %s", e.Line, e.Msg)
}

const (
	beginMarker  = "*** Begin Patch"
	endMarker    = "*** End Patch"
	addMarker    = "*** Add File: "
	deleteMarker = "*** Delete File: "
	updateMarker = "*** Update File: "
	moveMarker   = "*** Move to: "
	eofMarker    = "*** End of File"
	ctxMarker    = "@@ "
	emptyCtx     = "@@"
)

// splitLines splits like Rust's str::lines: at "\n", dropping one "\r"
// before it, with no empty element after a final newline.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// Parse parses patch text.
func Parse(text string) (*Patch, error) {
	lines := splitLines(strings.TrimSpace(text))
	body, err := checkBoundaries(lines)
	if err != nil {
		// Lenient mode: a heredoc wrapper passed as a literal argument.
		if n := len(lines); n >= 4 && (lines[0] == "<<EOF" || lines[0] == "<<'EOF'" || lines[0] == `<<"EOF"`) && strings.HasSuffix(lines[n-1], "EOF") {
			body, err = checkBoundaries(lines[1 : n-1])
		}
		if err != nil {
			return nil, err
		}
	}
	p := &Patch{}
	lineNo := 2
	for len(body) > 0 {
		h, n, err := parseHunk(body, lineNo)
		if err != nil {
			return nil, err
		}
		p.Hunks = append(p.Hunks, h)
		lineNo += n
		body = body[n:]
	}
	return p, nil
}

func checkBoundaries(lines []string) ([]string, error) {
	if len(lines) > 0 && strings.TrimSpace(lines[0]) != beginMarker {
		return nil, &ParseError{Msg: "The first line of the patch must be '*** Begin Patch'"}
	}
	if len(lines) < 2 || strings.TrimSpace(lines[len(lines)-1]) != endMarker {
		// A lone "*** Begin Patch" is both first and last line.
		return nil, &ParseError{Msg: "The last line of the patch must be '*** End Patch'"}
	}
	return lines[1 : len(lines)-1], nil
}

// parseHunk parses the hunk at the start of lines and returns how many
// lines it used.
func parseHunk(lines []string, lineNo int) (Hunk, int, error) {
	first := strings.TrimSpace(lines[0])
	if path, ok := strings.CutPrefix(first, addMarker); ok {
		var b strings.Builder
		n := 1
		for _, l := range lines[1:] {
			rest, ok := strings.CutPrefix(l, "+")
			if !ok {
				break
			}
			b.WriteString(rest)
			b.WriteByte('\n')
			n++
		}
		return Hunk{Op: Add, Path: path, Contents: b.String(), Line: lineNo}, n, nil
	}
	if path, ok := strings.CutPrefix(first, deleteMarker); ok {
		return Hunk{Op: Delete, Path: path, Line: lineNo}, 1, nil
	}
	if path, ok := strings.CutPrefix(first, updateMarker); ok {
		h := Hunk{Op: Update, Path: path, Line: lineNo}
		rest := lines[1:]
		n := 1
		if len(rest) > 0 {
			if to, ok := strings.CutPrefix(rest[0], moveMarker); ok {
				h.MoveTo = to
				rest = rest[1:]
				n++
			}
		}
		for len(rest) > 0 {
			if strings.TrimSpace(rest[0]) == "" { // blank lines between chunks
				rest = rest[1:]
				n++
				continue
			}
			if strings.HasPrefix(rest[0], "*") {
				break
			}
			c, used, err := parseChunk(rest, lineNo+n, len(h.Chunks) == 0)
			if err != nil {
				return Hunk{}, 0, err
			}
			h.Chunks = append(h.Chunks, c)
			rest = rest[used:]
			n += used
		}
		if len(h.Chunks) == 0 {
			return Hunk{}, 0, &ParseError{Line: lineNo, Msg: fmt.Sprintf("Update file hunk for path '%s' is empty", path)}
		}
		return h, n, nil
	}
	return Hunk{}, 0, &ParseError{Line: lineNo, Msg: fmt.Sprintf(
		"'%s' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'", first)}
}

// parseChunk parses one "@@" chunk. Only the first chunk of a hunk may omit
// its "@@" line. Line numbers in errors are Codex's: the chunk's line plus
// one, even when the offending line is the chunk's first.
func parseChunk(lines []string, lineNo int, allowMissingContext bool) (Chunk, int, error) {
	var c Chunk
	start := 0
	switch {
	case lines[0] == emptyCtx:
		start = 1
	case strings.HasPrefix(lines[0], ctxMarker):
		c.Context, c.HasContext = lines[0][len(ctxMarker):], true
		start = 1
	case !allowMissingContext:
		return c, 0, &ParseError{Line: lineNo, Msg: fmt.Sprintf("Expected update hunk to start with a @@ context marker, got: '%s'", lines[0])}
	}
	if start >= len(lines) {
		return c, 0, &ParseError{Line: lineNo + 1, Msg: "Update hunk does not contain any lines"}
	}
	n := 0
	for _, l := range lines[start:] {
		if l == eofMarker {
			if n == 0 {
				return c, 0, &ParseError{Line: lineNo + 1, Msg: "Update hunk does not contain any lines"}
			}
			c.EOF = true
			n++
			break
		}
		switch {
		case l == "":
			c.Old = append(c.Old, "")
			c.New = append(c.New, "")
		case l[0] == ' ':
			c.Old = append(c.Old, l[1:])
			c.New = append(c.New, l[1:])
		case l[0] == '+':
			c.New = append(c.New, l[1:])
		case l[0] == '-':
			c.Old = append(c.Old, l[1:])
		default:
			if n == 0 {
				return c, 0, &ParseError{Line: lineNo + 1, Msg: fmt.Sprintf(
					"Unexpected line found in update hunk: '%s'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)", l)}
			}
			return c, n + start, nil // the next chunk or hunk starts here
		}
		n++
	}
	return c, n + start, nil
}
