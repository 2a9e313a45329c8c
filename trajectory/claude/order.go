package claude

import (
	"os"
	"path/filepath"
	"sort"

	"github.com/pvisor/pvisor/run"
)

// sortByMtime orders by modification time (oldest first, or newest first)
// and keeps ties in ripgrep's walk order: directory order, depth first.
func sortByMtime(files []run.FileEntry, newestFirst bool) {
	order := newDirOrder()
	keys := make(map[string][]int, len(files))
	for _, f := range files {
		keys[f.Path] = order.key(f.Path)
	}
	sort.SliceStable(files, func(i, j int) bool {
		a, b := files[i].ModTime, files[j].ModTime
		if !a.Equal(b) {
			if newestFirst {
				return a.After(b)
			}
			return a.Before(b)
		}
		return lessInts(keys[files[i].Path], keys[files[j].Path])
	})
}

// recordedTies reorders, within each run of files of one modification
// time, those the recorded observation lists into its order; the others
// keep their places. A replay's workspace (a checkout, an extracted
// archive) often gives every file one mtime where the recording sandbox's
// files had distinct ones, or lists a directory in another order: which of
// two equal files comes first is then up to a file system the replay
// cannot reproduce, and the recording says what the agent saw. Claude Code
// 2.1.197 and 2.1.332 order equal files alike (ripgrep's walk order).
func recordedTies(files []run.FileEntry, names, recorded []string) {
	rank := make(map[string]int, len(recorded))
	for i, n := range recorded {
		if _, dup := rank[n]; !dup && n != "" {
			rank[n] = i
		}
	}
	for lo := 0; lo < len(files); {
		hi := lo + 1
		for hi < len(files) && files[hi].ModTime.Equal(files[lo].ModTime) {
			hi++
		}
		var slots []int
		for i := lo; i < hi; i++ {
			if _, ok := rank[names[i]]; ok {
				slots = append(slots, i)
			}
		}
		if len(slots) > 1 {
			fs, ns := make([]run.FileEntry, len(slots)), make([]string, len(slots))
			order := append([]int(nil), slots...)
			sort.SliceStable(order, func(a, b int) bool { return rank[names[order[a]]] < rank[names[order[b]]] })
			for k, i := range order {
				fs[k], ns[k] = files[i], names[i]
			}
			for k, i := range slots {
				files[i], names[i] = fs[k], ns[k]
			}
		}
		lo = hi
	}
}

// dirOrder knows the position of each name in its directory's listing, in
// the order the file system returns them (what a walker without sorting
// sees), so ties sort as ripgrep's single-threaded walk yields them.
type dirOrder map[string]map[string]int

func newDirOrder() dirOrder { return dirOrder{} }

func (d dirOrder) key(p string) []int {
	var key []int
	for dir, name := filepath.Dir(p), filepath.Base(p); ; dir, name = filepath.Dir(dir), filepath.Base(dir) {
		key = append(key, d.pos(dir, name))
		if dir == "/" || dir == "." {
			break
		}
	}
	for i, j := 0, len(key)-1; i < j; i, j = i+1, j-1 {
		key[i], key[j] = key[j], key[i]
	}
	return key
}

func (d dirOrder) pos(dir, name string) int {
	m, ok := d[dir]
	if !ok {
		m = map[string]int{}
		if f, err := os.Open(dir); err == nil {
			entries, _ := f.ReadDir(-1)
			f.Close()
			for i, e := range entries {
				m[e.Name()] = i
			}
		}
		d[dir] = m
	}
	if i, ok := m[name]; ok {
		return i
	}
	return 1 << 30
}

func lessInts(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}
