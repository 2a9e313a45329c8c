package run

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// FileEntry is one walked file or directory.
type FileEntry struct {
	Path    string // absolute
	Rel     string // relative to the walk root, "/"-separated
	IsDir   bool
	Size    int64
	ModTime time.Time
}

// WalkOptions choose what a Glob, Grep or List walk visits. The defaults
// follow ripgrep (which Claude Code's and OpenCode's search tools run):
// hidden entries are skipped, .gitignore rules apply inside a git
// repository, .ignore and .rgignore apply everywhere, symlinks are neither
// listed nor followed. Unlike ripgrep, version-control directories (.git,
// .hg, .svn, .bzr, .jj, .sl) are skipped even with Hidden, as the agents
// exclude them explicitly.
type WalkOptions struct {
	Hidden         bool // include names starting with "."
	NoIgnore       bool // do not read .gitignore, .ignore, .rgignore, .git/info/exclude
	FollowSymlinks bool // list symlinked files and descend into symlinked directories
	IncludeVCS     bool // descend into version-control directories
}

var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".bzr": true, ".jj": true, ".sl": true}

// walker applies WalkOptions plus ripgrep-style overrides and type filters.
type walker struct {
	opt          WalkOptions
	overrides    globSet // --glob list: a plain glob includes, "!glob" excludes
	hasWhitelist bool
	types        []segPattern // basename patterns of the selected --type names
	rootSegs     []string
	inRepo       bool
}

// ignoreFrame holds the rules of one ignore file and the directory they are
// relative to (absolute path segments).
type ignoreFrame struct {
	base  []string
	rules globSet
}

func splitAbs(p string) []string {
	p = strings.Trim(filepath.ToSlash(p), "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func newWalker(root string, opt WalkOptions, overrides []string, types []segPattern) (*walker, error) {
	w := &walker{opt: opt, types: types, rootSegs: splitAbs(root)}
	for _, o := range overrides {
		g, ok, err := parseGitGlob(o)
		if err != nil {
			return nil, err
		}
		if ok {
			w.overrides = append(w.overrides, g)
			w.hasWhitelist = w.hasWhitelist || !g.negate
		}
	}
	for dir := root; ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			w.inRepo = true
			break
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	return w, nil
}

// ancestorFrames loads the ignore files of the directories above root, the
// outermost first: up to the repository root inside a repository, up to
// "/" otherwise (where only .ignore and .rgignore count).
func (w *walker) ancestorFrames(root string) []ignoreFrame {
	if w.opt.NoIgnore || exists(filepath.Join(root, ".git")) {
		return nil
	}
	var dirs []string
	for dir := root; filepath.Dir(dir) != dir; {
		dir = filepath.Dir(dir)
		dirs = append(dirs, dir)
		if w.inRepo && exists(filepath.Join(dir, ".git")) {
			break
		}
	}
	var frames []ignoreFrame
	for i := len(dirs) - 1; i >= 0; i-- {
		frames = w.loadFrames(frames, dirs[i])
	}
	return frames
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// loadFrames appends dir's ignore files in increasing precedence:
// .git/info/exclude, .gitignore (both only inside a repository), .ignore,
// .rgignore.
func (w *walker) loadFrames(frames []ignoreFrame, dir string) []ignoreFrame {
	if w.opt.NoIgnore {
		return frames
	}
	var names []string
	if w.inRepo {
		if fi, err := os.Stat(filepath.Join(dir, ".git")); err == nil && fi.IsDir() {
			names = append(names, ".git/info/exclude")
		}
		names = append(names, ".gitignore")
	}
	names = append(names, ".ignore", ".rgignore")
	base := splitAbs(dir)
	for _, n := range names {
		if rules := readIgnoreFile(filepath.Join(dir, n)); len(rules) > 0 {
			// The three-index slice keeps siblings from sharing a backing array.
			frames = append(frames[:len(frames):len(frames)], ignoreFrame{base: base, rules: rules})
		}
	}
	return frames
}

// readIgnoreFile parses gitignore syntax; unreadable or bad lines are
// skipped, as git and ripgrep skip them.
func readIgnoreFile(p string) globSet {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var rules globSet
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// Trailing spaces are ignored unless escaped with a backslash.
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
			line = line[:len(line)-1]
		}
		line = strings.ReplaceAll(line, `\ `, " ")
		if g, ok, err := parseGitGlob(line); err == nil && ok {
			rules = append(rules, g)
		}
	}
	return rules
}

// include decides an entry with ripgrep's precedence: overrides, then
// ignore files, then file types, then the hidden rule (which only applies
// when nothing else decided).
func (w *walker) include(frames []ignoreFrame, abs, rel []string, name string, isDir bool) bool {
	if !w.opt.IncludeVCS && vcsDirs[name] {
		return false
	}
	if len(w.overrides) > 0 {
		switch w.overrides.verdict(rel, isDir) {
		case ignored: // a plain glob matched: include, whatever the other rules say
			return true
		case whitelisted: // a "!glob" matched
			return false
		}
		if w.hasWhitelist && !isDir {
			return false
		}
	}
	ig := noVerdict
	for i := len(frames) - 1; i >= 0 && ig == noVerdict; i-- {
		f := frames[i]
		if len(abs) > len(f.base) {
			ig = f.rules.verdict(abs[len(f.base):], isDir)
		}
	}
	if ig == ignored {
		return false
	}
	if len(w.types) > 0 && !isDir {
		for _, t := range w.types {
			if t.match([]string{name}) {
				return true
			}
		}
		return false
	}
	if ig == whitelisted {
		return true
	}
	return w.opt.Hidden || !strings.HasPrefix(name, ".")
}

// walk visits root's descendants in name order. visit is called for every
// included entry; returning false for a directory skips its contents.
// Unreadable directories are skipped, as ripgrep skips them.
func (w *walker) walk(root string, visit func(e FileEntry) bool) {
	frames := w.ancestorFrames(root)
	var seen map[[2]uint64]bool
	if w.opt.FollowSymlinks {
		seen = map[[2]uint64]bool{}
		if id, ok := dirID(root); ok {
			seen[id] = true
		}
	}
	var rec func(dir string, rel []string, frames []ignoreFrame)
	rec = func(dir string, rel []string, frames []ignoreFrame) {
		frames = w.loadFrames(frames, dir)
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		abs := append(append([]string(nil), w.rootSegs...), rel...)
		for _, de := range ents {
			name := de.Name()
			p := filepath.Join(dir, name)
			isDir := de.IsDir()
			if de.Type()&fs.ModeSymlink != 0 {
				if !w.opt.FollowSymlinks {
					continue
				}
				fi, err := os.Stat(p)
				if err != nil {
					continue
				}
				isDir = fi.IsDir()
			} else if !isDir && !de.Type().IsRegular() {
				continue // fifos, sockets, devices: never searched
			}
			erel := append(rel[:len(rel):len(rel)], name)
			if !w.include(frames, append(abs[:len(abs):len(abs)], name), erel, name, isDir) {
				continue
			}
			fi, err := os.Stat(p)
			if err != nil {
				continue
			}
			e := FileEntry{Path: p, Rel: path.Join(erel...), IsDir: isDir, Size: fi.Size(), ModTime: fi.ModTime()}
			if !visit(e) || !isDir {
				continue
			}
			if seen != nil {
				id, ok := dirID(p)
				if !ok || seen[id] {
					continue // a symlink loop
				}
				seen[id] = true
				rec(p, erel, frames)
				delete(seen, id)
				continue
			}
			rec(p, erel, frames)
		}
	}
	rec(root, nil, frames)
}

func dirID(p string) ([2]uint64, bool) {
	fi, err := os.Stat(p)
	if err != nil {
		return [2]uint64{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return [2]uint64{}, false
	}
	return [2]uint64{uint64(st.Dev), st.Ino}, true
}

// checkDir validates a walk root.
func checkDir(op, root string) error {
	if err := checkAbs(op, root); err != nil {
		return err
	}
	fi, err := os.Stat(root)
	if err != nil {
		return fsErr(op, root, err)
	}
	if !fi.IsDir() {
		return newErr(op, root, NotDir, nil)
	}
	return nil
}
