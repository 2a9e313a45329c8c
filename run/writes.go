package run

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/pvisor/pvisor/overlay"
)

// WriteWatch collects the files that file tools (Write, Edit, apply_patch,
// …) changed outside a root. Only an overlay of the whole file system
// contains such writes; without one the replay says where they went.
// Shell commands are not seen: they write wherever they like.
type WriteWatch struct {
	root string
	// view: the process runs in an overlay's view of the whole tree, where
	// only writes into real (its state and output dirs) leave the overlay.
	view    bool
	real    []string
	mu      sync.Mutex
	outside []string
	// enforce (--policy enforce): GuardWrite refuses writes outside root,
	// listed in denied, instead of them being recorded after the fact.
	enforce bool
	denied  []string
}

// watches are the running watches. File tools report a path, not the run
// they belong to, so replays running side by side in one process (tests do)
// share what they note: a write inside any running replay's root is that
// replay's own, and a write outside all of them is listed by each — erring
// towards a degraded result, never hiding a write.
var (
	watchesMu sync.Mutex
	watches   []*WriteWatch
)

// WatchWrites starts recording writes outside root. In an overlay worker
// that runs in the view of the whole tree, every write but those into its
// own state and output dirs lands in the overlay: only those are recorded.
func WatchWrites(root string) *WriteWatch {
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	w := &WriteWatch{root: filepath.Clean(root)}
	w.real, w.view, _ = overlay.ToolView()
	watchesMu.Lock()
	watches = append(watches, w)
	watchesMu.Unlock()
	return w
}

// Stop ends the watch.
func (w *WriteWatch) Stop() {
	watchesMu.Lock()
	defer watchesMu.Unlock()
	watches = slices.DeleteFunc(watches, func(o *WriteWatch) bool { return o == w })
}

func (w *WriteWatch) contains(p string) bool {
	if within(p, w.root) {
		return true
	}
	// A container's root is an overlay in the state dir, dropped with it.
	if v := activeView(); v != nil && within(p, v.root) {
		return true
	}
	return w.view && !slices.ContainsFunc(w.real, func(d string) bool { return within(p, d) })
}

func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator)) || dir == "/"
}

// Outside lists the paths written outside the root, in the order of their
// first write.
func (w *WriteWatch) Outside() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.outside)
}

// NoteWrite tells the current watch, if any, that a file tool changed
// path (created, overwrote or removed it). The directory is resolved, so a
// symlink inside the root that leads out of it counts as outside.
func NoteWrite(path string) {
	watchesMu.Lock()
	active := slices.Clone(watches)
	watchesMu.Unlock()
	if len(active) == 0 {
		return
	}
	p := filepath.Clean(HostPath(path))
	if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(dir, filepath.Base(p))
	}
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
	}
	if slices.ContainsFunc(active, func(w *WriteWatch) bool { return w.contains(p) }) {
		return
	}
	for _, w := range active {
		w.mu.Lock()
		if !slices.Contains(w.outside, p) {
			w.outside = append(w.outside, p)
		}
		w.mu.Unlock()
	}
}
