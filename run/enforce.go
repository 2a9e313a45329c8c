package run

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// Enforce makes the watch deny, not record, file tools' writes outside its
// root (--policy enforce): GuardWrite then fails them with EACCES, which
// each agent's file tool reports in its own words.
func (w *WriteWatch) Enforce() {
	w.mu.Lock()
	w.enforce = true
	w.mu.Unlock()
}

// Denied lists the writes GuardWrite refused, in order of first refusal.
func (w *WriteWatch) Denied() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.denied)
}

// GuardWrite is called by a file tool before it creates, changes or
// removes path. Under an enforcing watch, a path that resolves (symlinks
// of its existing ancestors followed, so a link inside the workspace does
// not lead out) outside every running replay's root is refused with a
// *fs.PathError wrapping EACCES and listed as denied.
func GuardWrite(op, path string) error {
	watchesMu.Lock()
	active := slices.Clone(watches)
	watchesMu.Unlock()
	var enforcing []*WriteWatch
	for _, w := range active {
		w.mu.Lock()
		if w.enforce {
			enforcing = append(enforcing, w)
		}
		w.mu.Unlock()
	}
	if len(enforcing) == 0 {
		return nil
	}
	p := resolveExisting(filepath.Clean(HostPath(path)), 0)
	if slices.ContainsFunc(active, func(w *WriteWatch) bool { return within(p, w.root) }) {
		return nil
	}
	for _, w := range enforcing {
		w.mu.Lock()
		if d := ContainerPath(p); !slices.Contains(w.denied, d) {
			w.denied = append(w.denied, d)
		}
		w.mu.Unlock()
	}
	return &fs.PathError{Op: op, Path: path, Err: syscall.EACCES}
}

// resolveExisting resolves the symlinks of p's longest existing prefix
// (p itself included when it is a link) and appends the rest.
func resolveExisting(p string, depth int) string {
	rest := ""
	for cur := p; ; {
		if fi, err := os.Lstat(cur); err == nil {
			if real, err := filepath.EvalSymlinks(cur); err == nil {
				return filepath.Join(real, rest)
			}
			// A dangling link: the write would create its target.
			if target, err := os.Readlink(cur); err == nil && fi.Mode()&os.ModeSymlink != 0 && depth < 40 {
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(cur), target)
				}
				return resolveExisting(filepath.Join(target, rest), depth+1)
			}
			return p
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
