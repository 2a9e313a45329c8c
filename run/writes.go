package run

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// WriteWatch collects the files that file tools (Write, Edit, apply_patch,
// …) changed outside a root. Only an overlay of the whole file system
// could contain such writes; without one the replay says where they went.
// Shell commands are not seen: they write wherever they like.
type WriteWatch struct {
	root    string
	mu      sync.Mutex
	outside []string
}

var currentWatch atomic.Pointer[WriteWatch]

// WatchWrites starts recording writes outside root, replacing any watch
// still running (one replay per process).
func WatchWrites(root string) *WriteWatch {
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	w := &WriteWatch{root: filepath.Clean(root)}
	currentWatch.Store(w)
	return w
}

// Stop ends the watch.
func (w *WriteWatch) Stop() { currentWatch.CompareAndSwap(w, nil) }

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
	w := currentWatch.Load()
	if w == nil {
		return
	}
	p := filepath.Clean(path)
	if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(dir, filepath.Base(p))
	}
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
	}
	if p == w.root || strings.HasPrefix(p, w.root+string(filepath.Separator)) || w.root == "/" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Contains(w.outside, p) {
		w.outside = append(w.outside, p)
	}
}
