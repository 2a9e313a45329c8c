package workspace

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/pvisor/pvisor/result"
)

// Limits bound a snapshot and its diff. A workspace is whatever the
// replayed tools and the agent left, so nothing about it is trusted: file
// count, file sizes and the diff's length are all capped.
type Limits struct {
	MaxFiles     int   // files walked; more are counted as skipped
	MaxFileBytes int64 // larger files are compared by size and hash only
	MaxKeptBytes int64 // content kept in memory across the snapshot
	MaxDiffLines int   // a text file with more lines (old + new) is summarised
	MaxDiffBytes int   // the diff text; the rest is cut with a note
}

// DefaultLimits suit a repository a coding agent works in.
var DefaultLimits = Limits{MaxFiles: 50000, MaxFileBytes: 1 << 20, MaxKeptBytes: 64 << 20, MaxDiffLines: 20000, MaxDiffBytes: 1 << 20}

// snapEntry is one path of a snapshot: a regular file (content kept when small
// enough), a symlink (its target) or a directory.
type snapEntry struct {
	kind    byte // 'f', 'l', 'd'
	mode    fs.FileMode
	size    int64
	sum     [32]byte
	content []byte // nil when not kept
	target  string // symlink
}

// Snapshot is the state of a workspace at one moment, as a diff needs it.
type Snapshot struct {
	root    string
	entries map[string]*snapEntry
	skipped int // paths past MaxFiles
	lim     Limits
	kept    int64
}

// skipDirs are not diffed: version-control internals change with every
// commit and say nothing a reader of the diff wants.
var skipDirs = map[string]bool{".git": true, ".hg": true, ".svn": true}

// Take records dir's files. It never follows a symlink and never opens
// anything but a regular file, so a FIFO or device left in the workspace
// cannot block it.
func Take(dir string, lim Limits) (*Snapshot, error) {
	s := &Snapshot{root: dir, entries: map[string]*snapEntry{}, lim: lim}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			return nil // unreadable: left out, as it cannot be compared
		}
		if path == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && skipDirs[d.Name()] {
			return fs.SkipDir
		}
		if len(s.entries) >= lim.MaxFiles {
			s.skipped++
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		switch {
		case d.IsDir():
			s.entries[rel] = &snapEntry{kind: 'd', mode: info.Mode().Perm()}
		case info.Mode()&fs.ModeSymlink != 0:
			t, _ := os.Readlink(path)
			s.entries[rel] = &snapEntry{kind: 'l', target: t}
		case info.Mode().IsRegular():
			e, err := s.readFile(path, info)
			if err == nil {
				s.entries[rel] = e
			}
		}
		return nil
	})
	return s, err
}

func (s *Snapshot) readFile(path string, info fs.FileInfo) (*snapEntry, error) {
	e := &snapEntry{kind: 'f', mode: info.Mode().Perm(), size: info.Size()}
	f, err := os.OpenFile(path, os.O_RDONLY|nofollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is no longer a regular file", path)
	}
	h := sha256.New()
	keep := info.Size() <= s.lim.MaxFileBytes && s.kept+info.Size() <= s.lim.MaxKeptBytes
	var buf bytes.Buffer
	w := io.Writer(h)
	if keep {
		w = io.MultiWriter(h, &buf)
	}
	// The size is re-read as it is hashed: a file still growing counts as
	// what was read, and the cap stays a cap.
	n, err := io.Copy(w, io.LimitReader(f, max(info.Size(), 0)+1))
	if err != nil {
		return nil, err
	}
	e.size = n
	copy(e.sum[:], h.Sum(nil))
	if keep && int64(buf.Len()) <= s.lim.MaxFileBytes {
		e.content = buf.Bytes()
		s.kept += int64(buf.Len())
	}
	return e, nil
}

// DiffStats summarises a diff for the result's metadata.
type DiffStats struct {
	Added     int  `json:"added"`
	Deleted   int  `json:"deleted"`
	Modified  int  `json:"modified"`
	Binary    int  `json:"binary"`    // changed files shown as one line, not as text
	Summaries int  `json:"summaries"` // text files too large to diff line by line
	Truncated bool `json:"truncated"` // the diff was cut at MaxDiffBytes
	Skipped   int  `json:"skipped_paths,omitempty"`
	Bytes     int  `json:"bytes"`
}

// Diff compares the snapshot taken before with the workspace now, as a
// unified diff (a/ and b/ prefixes, as git prints them). Binary files,
// files over the size limits and mode or symlink changes get one line each.
func (s *Snapshot) Diff() (string, DiffStats, error) {
	now, err := Take(s.root, s.lim)
	if err != nil {
		return "", DiffStats{}, err
	}
	st := DiffStats{Skipped: s.skipped + now.skipped}
	paths := map[string]bool{}
	for p := range s.entries {
		paths[p] = true
	}
	for p := range now.entries {
		paths[p] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	var sb strings.Builder
	for _, p := range sorted {
		if sb.Len() > s.lim.MaxDiffBytes {
			st.Truncated = true
			break
		}
		a, b := s.entries[p], now.entries[p]
		switch {
		case a == nil && b.kind == 'd', b == nil && a.kind == 'd':
			continue // a directory's files say what changed
		case a == nil:
			st.Added++
		case b == nil:
			st.Deleted++
		case same(a, b):
			continue
		default:
			st.Modified++
		}
		s.writeFileDiff(&sb, p, a, b, &st)
	}
	out := sb.String()
	if len(out) > s.lim.MaxDiffBytes {
		cut := s.lim.MaxDiffBytes
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out, st.Truncated = out[:cut], true
	}
	if st.Truncated {
		out += fmt.Sprintf("\n[pvisor: diff cut at %d bytes; %d added, %d deleted, %d modified in all]\n", s.lim.MaxDiffBytes, st.Added, st.Deleted, st.Modified)
	}
	if st.Skipped > 0 {
		out += fmt.Sprintf("[pvisor: %d path(s) past the %d-file limit were not compared]\n", st.Skipped, s.lim.MaxFiles)
	}
	st.Bytes = len(out)
	return out, st, nil
}

// nofollow: a path swapped for a symlink or a FIFO since the walk saw it
// is neither followed nor waited on.
const nofollow = unix.O_NOFOLLOW | unix.O_NONBLOCK

func same(a, b *snapEntry) bool {
	return a.kind == b.kind && a.mode == b.mode && a.size == b.size && a.sum == b.sum && a.target == b.target
}

func (s *Snapshot) writeFileDiff(sb *strings.Builder, p string, a, b *snapEntry, st *DiffStats) {
	fmt.Fprintf(sb, "diff --pvisor a/%s b/%s\n", p, p)
	switch {
	case a == nil:
		fmt.Fprintf(sb, "new %s\n", describe(b))
	case b == nil:
		fmt.Fprintf(sb, "deleted %s\n", describe(a))
	case a.kind != b.kind || a.kind == 'l':
		fmt.Fprintf(sb, "was %s\nnow %s\n", describe(a), describe(b))
		return
	case a.mode != b.mode:
		fmt.Fprintf(sb, "old mode %o\nnew mode %o\n", a.mode, b.mode)
	}
	if (a != nil && a.kind != 'f') || (b != nil && b.kind != 'f') || (a != nil && b != nil && a.sum == b.sum) {
		return
	}
	old, nw := textOf(a), textOf(b)
	switch {
	case old.big || nw.big:
		st.Summaries++
		fmt.Fprintf(sb, "File changed: %d → %d bytes (over the %d-byte limit for a diff)\n", sizeOf(a), sizeOf(b), s.lim.MaxFileBytes)
	case !old.ok || !nw.ok:
		st.Binary++
		fmt.Fprintf(sb, "Binary files a/%s and b/%s differ (%d → %d bytes)\n", p, p, sizeOf(a), sizeOf(b))
	case old.lines+nw.lines > s.lim.MaxDiffLines:
		st.Summaries++
		fmt.Fprintf(sb, "Text file changed: %d → %d lines (too long to diff here)\n", old.lines, nw.lines)
	default:
		from, to := "a/"+p, "b/"+p
		if a == nil {
			from = "/dev/null"
		}
		if b == nil {
			to = "/dev/null"
		}
		sb.WriteString(result.UnifiedDiff(from, to, old.text, nw.text, 3))
	}
}

type text struct {
	text  string
	lines int
	ok    bool // kept, and text rather than binary
	big   bool // not kept: over the size limits
}

// textOf is a file's content as diffable text: kept in the snapshot, valid
// UTF-8 and free of NUL bytes (what git calls binary). Absent is empty text.
func textOf(e *snapEntry) text {
	if e == nil {
		return text{ok: true}
	}
	if e.content == nil && e.size > 0 {
		return text{big: true}
	}
	if bytes.IndexByte(e.content, 0) >= 0 || !utf8.Valid(e.content) {
		return text{}
	}
	return text{text: string(e.content), lines: bytes.Count(e.content, []byte("\n")) + 1, ok: true}
}

func sizeOf(e *snapEntry) int64 {
	if e == nil {
		return 0
	}
	return e.size
}

func describe(e *snapEntry) string {
	switch e.kind {
	case 'd':
		return "directory"
	case 'l':
		return "symlink → " + e.target
	}
	return fmt.Sprintf("file mode %o, %d bytes", e.mode, e.size)
}
