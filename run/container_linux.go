package run

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ContainerRoot is a run's writable view of a root file system given by
// the user: an overlay whose lower layer is that directory, never written,
// and whose upper and work dirs are in the run's state dir. Each call's
// init enters it (package toolinit).
type ContainerRoot struct {
	Lower  string
	Merged string
	dir    string
}

// MountContainerRoot mounts the overlay of lower under dir (the run's
// state, created). Close unmounts it and removes dir: the tools' writes
// to the container's files end with the run.
func MountContainerRoot(lower, dir string) (*ContainerRoot, error) {
	fi, err := os.Stat(lower)
	if err != nil {
		return nil, fmt.Errorf("container root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("container root %s is not a directory", lower)
	}
	c := &ContainerRoot{Lower: lower, Merged: filepath.Join(dir, "merged"), dir: dir}
	for _, d := range []string{"upper", "work", "merged"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("container root: %w", err)
		}
	}
	// The upper dir's mode becomes the merged root's: the lower's, not 0700.
	_ = os.Chmod(filepath.Join(dir, "upper"), fi.Mode().Perm())
	opts := "lowerdir=" + escapeOverlayOpt(lower) + ",upperdir=" + escapeOverlayOpt(filepath.Join(dir, "upper")) +
		",workdir=" + escapeOverlayOpt(filepath.Join(dir, "work"))
	if err := unix.Mount("overlay", c.Merged, "overlay", unix.MS_NOSUID, opts); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("container root: mount an overlay of %s (the kernel needs overlayfs; the state dir must not be on an overlay itself): %w", lower, err)
	}
	// Private: the tools' per-call namespaces copy it, nothing propagates
	// back.
	_ = unix.Mount("", c.Merged, "", unix.MS_PRIVATE, "")
	return c, nil
}

// escapeOverlayOpt escapes what overlayfs's option parser splits on.
func escapeOverlayOpt(p string) string {
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == ',' || p[i] == ':' || p[i] == '\\' {
			out = append(out, '\\')
		}
		out = append(out, p[i])
	}
	return string(out)
}

// Close unmounts the overlay and removes the run's layer.
func (c *ContainerRoot) Close() error {
	if c == nil {
		return nil
	}
	if err := unix.Unmount(c.Merged, unix.MNT_DETACH); err != nil && err != unix.EINVAL {
		return fmt.Errorf("container root: unmount %s: %w", c.Merged, err)
	}
	return os.RemoveAll(c.dir)
}
