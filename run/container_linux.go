package run

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// containerDevices are the device nodes a container's /dev gets, bound
// from the host's: what shells and build tools open by name. No disks, no
// /dev/mem, no /dev/kmsg.
var containerDevices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// enterRootfs makes root (a directory of this mount namespace, private by
// now) the root of the calling init: binds at their own paths, a minimal
// /dev, then pivot_root and the old root detached. /proc is mounted by
// the caller, after. Targets are resolved inside root (ResolveIn), so a
// symlink of an untrusted image cannot turn a bind onto a host path.
func enterRootfs(root string, binds []string) error {
	// A bind onto itself: pivot_root wants new_root to be a mount point.
	if err := unix.Mount(root, root, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("container root %s: bind: %w", root, err)
	}
	for _, b := range binds {
		if err := bindInto(root, b, b); err != nil {
			return err
		}
	}
	dev, err := mkdirIn(root, "/dev")
	if err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=755,size=1m"); err != nil {
		return fmt.Errorf("container /dev: %w", err)
	}
	for _, d := range containerDevices {
		if _, err := os.Stat("/dev/" + d); err != nil {
			continue // a host without it (tty with no controlling terminal is fine)
		}
		if err := bindInto(root, "/dev/"+d, "/dev/"+d); err != nil {
			return err
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("container /dev/%s: %w", name, err)
		}
	}
	shm := filepath.Join(dev, "shm")
	if err := os.Mkdir(shm, 0o1777); err != nil {
		return fmt.Errorf("container /dev/shm: %w", err)
	}
	if err := unix.Mount("tmpfs", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=64m"); err != nil {
		return fmt.Errorf("container /dev/shm: %w", err)
	}
	if _, err := mkdirIn(root, "/proc"); err != nil {
		return err
	}
	if err := unix.Chdir(root); err != nil {
		return fmt.Errorf("container root: %w", err)
	}
	// pivot_root(".", ".") stacks the old root under the new one at "/";
	// detaching "." then drops it, with every host mount below it.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root into %s: %w", root, err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("container root: %w", err)
	}
	return nil
}

// mkdirIn creates the directory p (absolute, as the container sees it)
// under root and returns its path here.
func mkdirIn(root, p string) (string, error) {
	t, err := ResolveIn(root, p)
	if err != nil {
		return "", fmt.Errorf("container %s: %w", p, err)
	}
	if err := os.MkdirAll(t, 0o755); err != nil {
		return "", fmt.Errorf("container %s: %w", p, err)
	}
	return t, nil
}

// bindInto binds host path src at dst inside root, creating the mount
// point (a directory or an empty file, as src is).
func bindInto(root, src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("container bind %s: %w", src, err)
	}
	t, err := ResolveIn(root, dst)
	if err != nil {
		return fmt.Errorf("container bind %s: %w", dst, err)
	}
	if fi.IsDir() {
		err = os.MkdirAll(t, 0o755)
	} else if err = os.MkdirAll(filepath.Dir(t), 0o755); err == nil {
		var f *os.File
		if f, err = os.OpenFile(t, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("container bind %s: mount point: %w", dst, err)
	}
	if err := unix.Mount(src, t, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("container bind %s: %w", dst, err)
	}
	return nil
}

// ContainerRoot is a run's writable view of a root file system given by
// the user: an overlay whose lower layer is that directory, never written,
// and whose upper and work dirs are in the run's state dir.
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
