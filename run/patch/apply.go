package patch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/pvisor/pvisor/run"
)

// Options tune Apply.
type Options struct {
	// Dir resolves relative hunk paths (the agent's working directory).
	// It must be absolute when any path is relative.
	Dir string
	// Partial reproduces Codex, which writes hunk by hunk: when a hunk
	// fails, the earlier ones stay applied (its own test scenario
	// "failure_after_partial_success_leaves_changes"). The default applies
	// all hunks or none.
	Partial bool
}

// Change is one applied file operation.
type Change struct {
	Op     Op
	Path   string // absolute
	MoveTo string // absolute Update destination, "" when not moved
	Before []byte // nil for Add of a new file
	After  []byte // nil for Delete
}

// Result lists what a patch changed. Added, Modified and Deleted hold the
// paths as written in the patch (a moved file is Modified under its new
// path), each in patch order: Codex prints them as "A", then "M", then "D"
// lines after "Success. Updated the following files:".
type Result struct {
	Added    []string
	Modified []string
	Deleted  []string
	Changes  []Change // in hunk order
}

// ErrorKind classifies apply failures.
type ErrorKind int

const (
	NoHunks         ErrorKind = iota // the patch has no hunks
	ContextNotFound                  // a chunk's "@@ context" line is not in the file
	LinesNotFound                    // a chunk's old lines are not in the file
	ReadFailed                       // the file to update cannot be read (missing, not UTF-8, a directory)
	DeleteFailed                     // the file to delete cannot be removed (missing, a directory)
	WriteFailed                      // writing (or creating parent directories) failed
)

// ApplyError is a patch that parsed but could not be applied.
type ApplyError struct {
	Kind      ErrorKind
	Hunk      int    // index of the failing hunk; -1 for NoHunks
	Path      string // absolute path concerned
	PatchPath string // the same path as written in the patch
	Context   string // ContextNotFound: the context line
	Lines     []string
	Err       error // underlying I/O error, if any
	// Applied is what stayed applied: with Options.Partial the hunks before
	// the failing one, otherwise nothing.
	Applied Result
}

// Error uses Codex's messages.
func (e *ApplyError) Error() string {
	switch e.Kind {
	case NoHunks:
		return "No files were modified."
	case ContextNotFound:
		return fmt.Sprintf("Failed to find context '%s' in %s", e.Context, e.Path)
	case LinesNotFound:
		return fmt.Sprintf("Failed to find expected lines in %s:\n%s", e.Path, strings.Join(e.Lines, "\n"))
	case ReadFailed:
		return fmt.Sprintf("Failed to read file to update %s: %v", e.Path, e.Err)
	case DeleteFailed:
		return fmt.Sprintf("Failed to delete file %s", e.Path)
	default:
		return fmt.Sprintf("Failed to write file %s", e.Path)
	}
}

func (e *ApplyError) Unwrap() error { return e.Err }

// Apply applies p to the file system.
func Apply(p *Patch, opt Options) (Result, error) {
	if p == nil || len(p.Hunks) == 0 {
		return Result{}, &ApplyError{Kind: NoHunks, Hunk: -1}
	}
	var done Result
	st := newStage()
	for i, h := range p.Hunks {
		if err := st.apply(i, h, opt.Dir); err != nil {
			if opt.Partial {
				err.Applied = done
			}
			return Result{}, err
		}
		if opt.Partial {
			if err := st.commit(); err != nil {
				err.Hunk, err.PatchPath, err.Applied = i, h.Path, done
				return Result{}, err
			}
		}
		record(&done, h, st.last)
		if opt.Partial {
			st = newStage()
		}
	}
	if !opt.Partial {
		if err := st.commit(); err != nil {
			return Result{}, err
		}
	}
	return done, nil
}

func record(r *Result, h Hunk, c Change) {
	switch h.Op {
	case Add:
		r.Added = append(r.Added, h.Path)
	case Delete:
		r.Deleted = append(r.Deleted, h.Path)
	case Update:
		if h.MoveTo != "" {
			r.Modified = append(r.Modified, h.MoveTo)
		} else {
			r.Modified = append(r.Modified, h.Path)
		}
	}
	r.Changes = append(r.Changes, c)
}

func resolve(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// stage holds file contents as the patch has them so far, so later hunks
// see earlier ones (an Add then an Update of the same file) before anything
// is written.
type stage struct {
	files map[string]*staged
	order []string // first-touch order, for commit
	last  Change
}

type staged struct {
	exists     bool
	content    []byte
	mode       fs.FileMode
	origExists bool
	orig       []byte
}

func newStage() *stage { return &stage{files: map[string]*staged{}} }

func (s *stage) get(path string) (*staged, error) {
	if f, ok := s.files[path]; ok {
		return f, nil
	}
	f := &staged{mode: 0o666}
	// In a container run, a path outside the workspace is the container's.
	here := run.HostPath(path)
	fi, err := os.Stat(here)
	switch {
	case err == nil && fi.IsDir():
		return nil, &fs.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	case err == nil:
		if f.orig, err = os.ReadFile(here); err != nil {
			return nil, err
		}
		f.origExists, f.exists, f.content, f.mode = true, true, f.orig, fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	s.files[path] = f
	s.order = append(s.order, path)
	return f, nil
}

func (s *stage) apply(i int, h Hunk, dir string) *ApplyError {
	path := resolve(dir, h.Path)
	fail := func(kind ErrorKind, p string, err error) *ApplyError {
		return &ApplyError{Kind: kind, Hunk: i, Path: p, PatchPath: h.Path, Err: err}
	}
	switch h.Op {
	case Add:
		f, err := s.get(path)
		if err != nil {
			return fail(WriteFailed, path, err)
		}
		s.last = Change{Op: Add, Path: path, Before: before(f), After: []byte(h.Contents)}
		f.exists, f.content = true, []byte(h.Contents)
	case Delete:
		f, err := s.get(path)
		if err != nil || !f.exists {
			if err == nil {
				err = fs.ErrNotExist
			}
			return fail(DeleteFailed, path, err)
		}
		s.last = Change{Op: Delete, Path: path, Before: f.content}
		f.exists, f.content = false, nil
	case Update:
		f, err := s.get(path)
		if err == nil && !f.exists {
			err = fs.ErrNotExist
		}
		if err == nil && !utf8.Valid(f.content) {
			err = errors.New("stream did not contain valid UTF-8")
		}
		if err != nil {
			return fail(ReadFailed, path, err)
		}
		after, aerr := updated(string(f.content), h.Chunks)
		if aerr != nil {
			aerr.Hunk, aerr.Path, aerr.PatchPath = i, path, h.Path
			return aerr
		}
		s.last = Change{Op: Update, Path: path, Before: f.content, After: []byte(after)}
		if h.MoveTo == "" {
			f.content = []byte(after)
			break
		}
		dest := resolve(dir, h.MoveTo)
		d, err := s.get(dest)
		if err != nil {
			e := fail(WriteFailed, dest, err)
			e.PatchPath = h.MoveTo
			return e
		}
		s.last.MoveTo = dest
		d.exists, d.content = true, []byte(after)
		// Codex writes the destination, then removes the source; moving a
		// file onto itself therefore deletes it, and so does this.
		f.exists, f.content = false, nil
	}
	return nil
}

func before(f *staged) []byte {
	if f.exists {
		return f.content
	}
	return nil
}

// commit writes the staged files; on failure it restores what it already
// wrote, so a failed commit changes nothing.
func (s *stage) commit() *ApplyError {
	var done []string
	for _, p := range s.order {
		f := s.files[p]
		err := run.GuardWrite("open", p)
		here := run.HostPath(p)
		switch {
		case err != nil:
		case f.exists:
			if err = os.MkdirAll(filepath.Dir(here), 0o777); err == nil {
				err = os.WriteFile(here, f.content, f.mode)
			}
		case f.origExists:
			err = os.Remove(here)
		default:
			continue
		}
		if err == nil {
			run.NoteWrite(p)
		}
		if err != nil {
			for _, q := range done {
				g, qh := s.files[q], run.HostPath(q)
				if g.origExists {
					_ = os.WriteFile(qh, g.orig, g.mode)
				} else {
					_ = os.Remove(qh)
				}
			}
			kind := WriteFailed
			if !f.exists {
				kind = DeleteFailed
			}
			return &ApplyError{Kind: kind, Hunk: -1, Path: p, Err: err}
		}
		done = append(done, p)
	}
	return nil
}

// updated applies chunks to content as Codex does: the file is split at
// "\n" (a final newline does not make a last empty line), each chunk is
// located after the previous one, and the result always ends with "\n".
func updated(content string, chunks []Chunk) (string, *ApplyError) {
	lines := strings.Split(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	type repl struct {
		start, n int
		new      []string
	}
	var repls []repl
	at := 0
	for _, c := range chunks {
		if c.HasContext {
			i := seek(lines, []string{c.Context}, at, false)
			if i < 0 {
				return "", &ApplyError{Kind: ContextNotFound, Context: c.Context}
			}
			at = i + 1
		}
		if len(c.Old) == 0 {
			// Pure addition: at the end, before a trailing empty line.
			ins := len(lines)
			if ins > 0 && lines[ins-1] == "" {
				ins--
			}
			repls = append(repls, repl{ins, 0, c.New})
			continue
		}
		old, nw := c.Old, c.New
		i := seek(lines, old, at, c.EOF)
		if i < 0 && old[len(old)-1] == "" {
			// The empty last line stands for the file's final newline.
			old = old[:len(old)-1]
			if len(nw) > 0 && nw[len(nw)-1] == "" {
				nw = nw[:len(nw)-1]
			}
			i = seek(lines, old, at, c.EOF)
		}
		if i < 0 {
			return "", &ApplyError{Kind: LinesNotFound, Lines: c.Old}
		}
		repls = append(repls, repl{i, len(old), nw})
		at = i + len(old)
	}
	sort.SliceStable(repls, func(a, b int) bool { return repls[a].start < repls[b].start })
	for k := len(repls) - 1; k >= 0; k-- {
		r := repls[k]
		end := min(r.start+r.n, len(lines))
		lines = append(lines[:r.start:r.start], append(append([]string(nil), r.new...), lines[end:]...)...)
	}
	if len(lines) == 0 || lines[len(lines)-1] != "" {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n"), nil
}

// seek finds pattern in lines at or after start, with decreasing
// strictness; with eof only the position that ends the file is tried.
// It returns -1 when not found.
func seek(lines, pattern []string, start int, eof bool) int {
	if len(pattern) == 0 {
		return start
	}
	if len(pattern) > len(lines) {
		return -1
	}
	from := start
	if eof {
		from = len(lines) - len(pattern)
	}
	for _, eq := range []func(a, b string) bool{
		func(a, b string) bool { return a == b },
		func(a, b string) bool { return trimEnd(a) == trimEnd(b) },
		func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) },
		func(a, b string) bool { return normalise(a) == normalise(b) },
	} {
	next:
		for i := from; i <= len(lines)-len(pattern); i++ {
			for j, p := range pattern {
				if !eq(lines[i+j], p) {
					continue next
				}
			}
			return i
		}
	}
	return -1
}

func trimEnd(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) }

// normalise folds typographic punctuation to ASCII, for patches written
// with plain ASCII against files that contain fancy dashes and quotes.
func normalise(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212':
			return '-'
		case '\u2018', '\u2019', '\u201A', '\u201B':
			return '\''
		case '\u201C', '\u201D', '\u201E', '\u201F':
			return '"'
		case '\u00A0', '\u2002', '\u2003', '\u2004', '\u2005', '\u2006', '\u2007', '\u2008', '\u2009', '\u200A', '\u202F', '\u205F', '\u3000':
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
}
