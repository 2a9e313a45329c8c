package run

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/pvisor/pvisor/run/toolinit"
)

// A container view (--executor container) makes the in-process file tools
// see what the shell tools see: an absolute path outside the workspace
// names a file of the container's root file system, not of this host.
// File tools are package functions called with a path (by every agent's
// session), so the view is package state, as the write watches are.
type containerView struct {
	root   string   // the container's root as this process sees it
	inside []string // host paths bound at the same path inside (workspace, runner dirs)
}

var (
	viewMu sync.Mutex
	views  []*containerView
)

// SetContainerView routes file tools' absolute paths outside inside (the
// workspace, bound at the same path in the container) into root. Release
// ends it. Two replays with different roots cannot share one process: a
// path names no run, so which root it means would be a guess.
func SetContainerView(root string, inside []string) (release func(), err error) {
	root = filepath.Clean(root)
	v := &containerView{root: root}
	for _, p := range inside {
		v.inside = append(v.inside, filepath.Clean(p))
		if real, err := filepath.EvalSymlinks(p); err == nil && real != filepath.Clean(p) {
			v.inside = append(v.inside, real)
		}
	}
	viewMu.Lock()
	defer viewMu.Unlock()
	for _, o := range views {
		if o.root != root {
			return nil, fmt.Errorf("another container replay (root %s) runs in this process; run this one in its own pvisor process", o.root)
		}
	}
	views = append(views, v)
	return func() {
		viewMu.Lock()
		defer viewMu.Unlock()
		views = slices.DeleteFunc(views, func(o *containerView) bool { return o == v })
	}, nil
}

func activeView() *containerView {
	viewMu.Lock()
	defer viewMu.Unlock()
	if len(views) == 0 {
		return nil
	}
	// All views share one root (SetContainerView); their insides add up.
	v := &containerView{root: views[0].root}
	for _, o := range views {
		v.inside = append(v.inside, o.inside...)
	}
	return v
}

// HostPath is where this process finds the file a tool names as p: p
// itself, unless a container view is set and p is an absolute path outside
// the paths bound into it; then p resolved inside the container's root,
// symlinks included, never leaving it. Paths already inside the root (a
// second resolution) are returned as they are.
func HostPath(p string) string {
	v := activeView()
	if v == nil || !filepath.IsAbs(p) {
		return p
	}
	c := filepath.Clean(p)
	if within(c, v.root) && v.root != "/" {
		return c
	}
	for _, d := range v.inside {
		if within(c, d) {
			return c
		}
	}
	h, err := ResolveIn(v.root, c)
	if err != nil {
		// Too many links: the tool gets the error of a path that does not
		// resolve, never a host file.
		return filepath.Join(v.root, c)
	}
	return h
}

// ContainerPath is HostPath's inverse for paths tools print (glob and
// grep results): a path inside the container's root, as the tool sees it.
func ContainerPath(h string) string {
	v := activeView()
	if v == nil {
		return h
	}
	if rel, ok := strings.CutPrefix(filepath.Clean(h), v.root); ok && (rel == "" || rel[0] == '/') {
		if rel == "" {
			return "/"
		}
		return rel
	}
	return h
}

// ResolveIn resolves p (absolute, as a process whose root is root sees it)
// to a path under root, following symlinks as that process's kernel would:
// an absolute target starts again at root, ".." never climbs above it. The
// last component is resolved too when it is a symlink; a missing component
// ends the walk (the rest is appended as it is). It is the init's own
// (toolinit.ResolveIn, which places the container's binds), so the file
// tools and the shell resolve an image's links alike.
func ResolveIn(root, p string) (string, error) {
	return toolinit.ResolveIn(filepath.Clean(root), p)
}
