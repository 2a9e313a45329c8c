package run

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// EditSpec is one exact-text replacement.
type EditSpec struct {
	Old        string
	New        string
	ReplaceAll bool
}

// Span is a byte range [Start, End) in the edited content.
type Span struct{ Start, End int }

// EditResult describes an Edit or MultiEdit.
type EditResult struct {
	Path    string
	Before  []byte // content before the edit (nil when Created)
	After   []byte // content written
	Created bool   // an empty Old created the file
	// Counts[i] is how many occurrences edit i replaced (one entry for Edit).
	Counts []int
	// Spans locate the replacement text of the last edit in After, for the
	// snippet agents show around an edit; see LineOf.
	Spans []Span
}

// editHere replaces Old with New in the file at path. Old must occur exactly
// once unless ReplaceAll. An empty Old creates the file with New when it
// does not exist or is empty (Claude Code's convention); on a file with
// content it fails with Kind NotEmpty.
func editHere(path string, e EditSpec) (EditResult, error) {
	return editFile("edit", path, []EditSpec{e})
}

// multiEditHere applies edits in order, each to the result of the previous one,
// and writes only if all of them succeed. A failure names the edit in
// Error.Index.
func multiEditHere(path string, edits []EditSpec) (EditResult, error) {
	if len(edits) == 0 {
		return EditResult{Path: path}, newErr("multi_edit", path, InvalidArgument, errors.New("no edits"))
	}
	return editFile("multi_edit", path, edits)
}

func editFile(op, path string, edits []EditSpec) (EditResult, error) {
	res := EditResult{Path: path}
	if err := checkAbs(op, path); err != nil {
		return res, err
	}
	var content []byte
	exists := false
	mode := fs.FileMode(0o666)
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return res, newErr(op, path, IsDir, nil)
	case err == nil && !fi.Mode().IsRegular():
		return res, notRegular(op, path, fi)
	case err == nil:
		exists, mode = true, fi.Mode().Perm()
		if content, _, err = ReadRegular(op, path); err != nil {
			return res, err
		}
		res.Before = content
	case !errors.Is(err, fs.ErrNotExist):
		return res, fsErr(op, path, err)
	}
	cur := string(content)
	for i, e := range edits {
		fail := func(kind Kind, count int) (EditResult, error) {
			err := newErr(op, path, kind, nil)
			err.Count = count
			if op == "multi_edit" {
				err.Index = i
			}
			return res, err
		}
		if e.Old == "" {
			if i > 0 || (exists && len(content) > 0) {
				return fail(NotEmpty, 0)
			}
			res.Created = !exists
			cur = e.New
			res.Counts = append(res.Counts, 1)
			res.Spans = []Span{{0, len(cur)}}
			continue
		}
		if !exists && !res.Created {
			return fail(NotFound, 0)
		}
		if e.Old == e.New {
			return fail(NoChange, 0)
		}
		n := strings.Count(cur, e.Old)
		switch {
		case n == 0:
			return fail(NoMatch, 0)
		case n > 1 && !e.ReplaceAll:
			return fail(NotUnique, n)
		}
		cur, res.Spans = replace(cur, e.Old, e.New, e.ReplaceAll)
		res.Counts = append(res.Counts, len(res.Spans))
	}
	res.After = []byte(cur)
	if err := GuardWrite("open", path); err != nil {
		return res, fsErr(op, path, err)
	}
	if res.Created {
		if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
			return res, fsErr(op, path, err)
		}
	}
	if err := os.WriteFile(path, res.After, mode); err != nil {
		return res, fsErr(op, path, err)
	}
	NoteWrite(path)
	return res, nil
}

// replace substitutes old by new (once, or everywhere) and returns where the
// new text landed.
func replace(s, old, new string, all bool) (string, []Span) {
	var b strings.Builder
	var spans []Span
	for {
		i := strings.Index(s, old)
		if i < 0 {
			break
		}
		b.WriteString(s[:i])
		spans = append(spans, Span{b.Len(), b.Len() + len(new)})
		b.WriteString(new)
		s = s[i+len(old):]
		if !all {
			break
		}
	}
	b.WriteString(s)
	return b.String(), spans
}

// LineOf returns the 1-based line number of byte offset off in content.
func LineOf(content []byte, off int) int {
	off = min(max(off, 0), len(content))
	return bytes.Count(content[:off], []byte{'\n'}) + 1
}
