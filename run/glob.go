package run

import (
	"errors"
	"path/filepath"
	"sort"
	"strings"
)

// GlobOptions tune Glob.
type GlobOptions struct {
	WalkOptions
	// Anchored matches the pattern against the whole path below the root,
	// like a shell glob: "*.go" is only the top level. The default is
	// ripgrep's --glob, which Claude Code's and OpenCode's glob tools run:
	// a pattern without "/" matches names at any depth, and a file the
	// pattern names is listed even if hidden or ignored.
	Anchored bool
	// IncludeDirs lists matching directories too (files only by default).
	IncludeDirs bool
	// Limit stops after that many matches (0: no limit) and sets Truncated.
	Limit int
}

// GlobResult lists matches in walk order (by name, depth first); sort them
// as the agent does with SortByModTime or SortByPath.
type GlobResult struct {
	Root      string // the directory the pattern was matched below
	Files     []FileEntry
	Truncated bool
}

// globHere finds files below root matching a doublestar pattern ("**" for any
// number of directories, {a,b} alternatives, * ? [..] within a name). An
// absolute pattern moves the root to its longest literal directory prefix.
func globHere(root, pattern string, opt GlobOptions) (GlobResult, error) {
	if filepath.IsAbs(pattern) {
		root, pattern = splitStaticPrefix(pattern)
	}
	res := GlobResult{Root: root}
	if err := checkDir("glob", root); err != nil {
		return res, err
	}
	if strings.TrimSpace(pattern) == "" {
		return res, newErr("glob", root, InvalidArgument, errors.New("empty pattern"))
	}
	var overrides []string
	var anchored []segPattern
	if opt.Anchored || strings.Contains(strings.TrimSuffix(pattern, "/"), "/") {
		alts, err := compileSegs(strings.TrimPrefix(pattern, "/"))
		if err != nil {
			return res, newErr("glob", pattern, InvalidArgument, err)
		}
		anchored = alts
	}
	if !opt.Anchored {
		overrides = []string{pattern}
	}
	w, err := newWalker(root, opt.WalkOptions, overrides, nil)
	if err != nil {
		return res, newErr("glob", pattern, InvalidArgument, err)
	}
	w.walk(root, func(e FileEntry) bool {
		if res.Truncated {
			return false
		}
		segs := strings.Split(e.Rel, "/")
		matched := true
		if anchored != nil {
			matched = anyMatch(anchored, segs)
		}
		if e.IsDir && anchored == nil {
			// In override mode every directory passes the walker; list one
			// only when the pattern itself names it.
			matched = w.overrides.verdict(segs, true) == ignored
		}
		if matched && (!e.IsDir || opt.IncludeDirs) {
			if opt.Limit > 0 && len(res.Files) >= opt.Limit {
				res.Truncated = true
				return false
			}
			res.Files = append(res.Files, e)
		}
		// Prune directories below which the anchored pattern cannot match.
		return !e.IsDir || anchored == nil || anyCouldMatchBelow(anchored, segs)
	})
	return res, nil
}

func anyMatch(alts []segPattern, segs []string) bool {
	for _, a := range alts {
		if a.match(segs) {
			return true
		}
	}
	return false
}

func anyCouldMatchBelow(alts []segPattern, dir []string) bool {
	for _, a := range alts {
		if a.couldMatchBelow(dir) {
			return true
		}
	}
	return false
}

// splitStaticPrefix splits an absolute pattern into the deepest directory
// without glob syntax and the rest.
func splitStaticPrefix(pattern string) (dir, rest string) {
	segs := strings.Split(pattern, "/")
	i := 0
	for i < len(segs)-1 && !strings.ContainsAny(segs[i], "*?[{\\") {
		i++
	}
	dir = "/" + strings.Join(segs[:i], "/")
	return filepath.Clean(dir), strings.Join(segs[i:], "/")
}

// SortByModTime orders entries by modification time, newest first when
// newestFirst, breaking ties by path so the order is deterministic.
func SortByModTime(files []FileEntry, newestFirst bool) {
	sort.SliceStable(files, func(i, j int) bool {
		a, b := files[i].ModTime, files[j].ModTime
		if !a.Equal(b) {
			return a.After(b) == newestFirst
		}
		return files[i].Path < files[j].Path
	})
}

// SortByPath orders entries by path.
func SortByPath(files []FileEntry) {
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
}

// ListOptions tune List.
type ListOptions struct {
	WalkOptions
	// Ignore holds gitignore-style patterns to leave out (e.g.
	// "node_modules/", "*.pyc"), as OpenCode's list tool passes them.
	Ignore []string
	// Limit stops after that many files (directories do not count) and
	// sets Truncated; 0 means no limit.
	Limit int
	// MaxDepth stops descending below that depth (1: only root's entries);
	// 0 means unlimited.
	MaxDepth int
}

// ListResult is a directory tree in walk order: every directory comes
// before its contents, siblings by name.
type ListResult struct {
	Root      string
	Entries   []FileEntry
	Truncated bool
}

// listHere walks root for a directory-tree listing.
func listHere(root string, opt ListOptions) (ListResult, error) {
	res := ListResult{Root: root}
	if err := checkDir("list", root); err != nil {
		return res, err
	}
	overrides := make([]string, 0, len(opt.Ignore))
	for _, ig := range opt.Ignore {
		if ig = strings.TrimSpace(ig); ig != "" {
			overrides = append(overrides, "!"+strings.TrimPrefix(ig, "!"))
		}
	}
	w, err := newWalker(root, opt.WalkOptions, overrides, nil)
	if err != nil {
		return res, newErr("list", root, InvalidArgument, err)
	}
	files := 0
	w.walk(root, func(e FileEntry) bool {
		if res.Truncated {
			return false
		}
		if !e.IsDir {
			if opt.Limit > 0 && files >= opt.Limit {
				res.Truncated = true
				return false
			}
			files++
		}
		res.Entries = append(res.Entries, e)
		return opt.MaxDepth <= 0 || strings.Count(e.Rel, "/")+1 < opt.MaxDepth
	})
	return res, nil
}
