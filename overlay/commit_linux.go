package overlay

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Commit does what cfg.Commit says with the upper layer of a finished run
// and reports the changes it saw. Call it after Run returned: Run's return
// guarantees that nothing writes to the upper layer any more.
//
//   - manual: nothing moves; Report.Upper says where the changes are.
//   - drop: the layers are removed; the workspace was never written, and
//     nothing the tools wrote outside it (Report.Outside) remains.
//   - apply: each change is copied into cfg.Path (never into a compose
//     layer) with its mode, owner, times and extended attributes, files
//     replaced by rename; then the layers are removed. A path that only a
//     compose layer had stays visible in the compose stack after a delete,
//     since a plain directory cannot hide a lower layer's file.
//
// When apply fails midway the workspace is partly updated, the layers are
// kept, and Report.Upper says where.
func Commit(cfg Config, l Layout) (Report, error) {
	if InNamespace() {
		return Report{}, errors.New("overlayfs: Commit must run after the isolated run, not inside it")
	}
	mode, err := ParseCommitMode(string(cfg.Commit))
	if err != nil {
		return Report{}, err
	}
	// The same real paths Preflight gave the mount.
	if cfg.Path, err = realPath(cfg.Path); err != nil {
		return Report{}, fmt.Errorf("overlayfs: workspace: %w", err)
	}
	compose := make([]string, len(cfg.Compose))
	for i, c := range cfg.Compose {
		if compose[i], err = realPath(c); err != nil {
			return Report{}, fmt.Errorf("overlayfs: compose layer: %w", err)
		}
	}
	cfg.Compose = compose
	changes, err := Changes(cfg, l)
	if err != nil {
		return Report{Mode: mode, Upper: l.Upper}, fmt.Errorf("%w; nothing was committed, the layers are in %s", err, l.Dir)
	}
	outside, err := OutsideChanges(l)
	if err != nil {
		return Report{Mode: mode, Upper: l.Upper}, fmt.Errorf("%w; nothing was committed, the layers are in %s", err, l.Dir)
	}
	rep := Report{Mode: mode, Changes: changes, Outside: outside}
	// Changes outside the workspace are never applied to the host: only
	// drop removes them, the other modes leave them for inspection.
	keepOutside := mode != CommitDrop && len(outside) > 0
	if keepOutside {
		rep.OutsideUpper = l.RootUpper
	} else if err := removeRootLayers(l); err != nil {
		return rep, fmt.Errorf("overlayfs: remove layers: %w; delete %s by hand", err, l.Dir)
	}
	switch mode {
	case CommitManual:
		rep.Upper = l.Upper
		return rep, nil
	case CommitApply:
		if err := apply(cfg.Path, l.Upper, changes); err != nil {
			rep.Upper = l.Upper
			return rep, fmt.Errorf("overlayfs: apply stopped: %w; the workspace is partly updated and every change is still in %s", err, l.Upper)
		}
	}
	if err := removeLayers(l); err != nil {
		return rep, fmt.Errorf("overlayfs: remove layers: %w; delete %s by hand", err, l.Dir)
	}
	return rep, nil
}

func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

func removeLayers(l Layout) error {
	if err := os.RemoveAll(l.Upper); err != nil {
		return err
	}
	if err := os.RemoveAll(l.Work); err != nil {
		return err
	}
	if err := os.Remove(l.Dir); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTEMPTY) {
		return err
	}
	return nil
}

// applier writes changes through an os.Root, so no change can reach outside
// the workspace even through a symlink planted in it.
type applier struct {
	root  *os.Root
	upper string
	// links maps an upper inode with several names to the first path it was
	// applied to, so hard links made during the run stay hard links.
	links map[[2]uint64]string
	// dirs get their times last: creating their entries changes them.
	dirs []string
}

func apply(workspace, upper string, changes []Change) error {
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return err
	}
	defer root.Close()
	a := &applier{root: root, upper: upper, links: map[[2]uint64]string{}}
	// Sorted paths put every directory before its entries.
	for _, c := range changes {
		if err := a.change(c); err != nil {
			return fmt.Errorf("%s %s %s: %w", c.Kind, c.Type, c.Path, err)
		}
	}
	for i := len(a.dirs) - 1; i >= 0; i-- {
		if err := a.dirTimes(a.dirs[i]); err != nil {
			return fmt.Errorf("set times of %s: %w", a.dirs[i], err)
		}
	}
	return nil
}

func (a *applier) change(c Change) error {
	if c.Kind == Deleted {
		err := a.root.RemoveAll(c.Path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	src := filepath.Join(a.upper, filepath.FromSlash(c.Path))
	var st unix.Stat_t
	if err := unix.Lstat(src, &st); err != nil {
		return err
	}
	if err := a.ensureParent(c.Path); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return a.dir(c.Path, src, &st)
	}
	return a.nondir(c.Path, src, &st)
}

// ensureParent creates parents that only a compose layer had, copying their
// attributes from the upper layer.
func (a *applier) ensureParent(rel string) error {
	parent := path.Dir(rel)
	if parent == "." {
		return nil
	}
	if fi, err := a.root.Lstat(parent); err == nil && fi.IsDir() {
		return nil
	}
	if err := a.ensureParent(parent); err != nil {
		return err
	}
	src := filepath.Join(a.upper, filepath.FromSlash(parent))
	var st unix.Stat_t
	if err := unix.Lstat(src, &st); err != nil {
		return err
	}
	return a.dir(parent, src, &st)
}

func (a *applier) dir(rel, src string, st *unix.Stat_t) error {
	if rel != "." {
		fi, err := a.root.Lstat(rel)
		if err == nil && !fi.IsDir() {
			if err := a.root.RemoveAll(rel); err != nil {
				return err
			}
			err = fs.ErrNotExist
		}
		if errors.Is(err, fs.ErrNotExist) {
			err = a.root.Mkdir(rel, 0o700)
		}
		if err != nil {
			return err
		}
		a.dirs = append(a.dirs, rel)
	}
	f, err := a.root.Open(rel)
	if err != nil {
		return err
	}
	defer f.Close()
	return setAttrs(int(f.Fd()), src, st)
}

func (a *applier) nondir(rel, src string, st *unix.Stat_t) error {
	parent, err := a.root.Open(path.Dir(rel))
	if err != nil {
		return err
	}
	defer parent.Close()
	pfd, base := int(parent.Fd()), path.Base(rel)
	// rename(2) replaces anything but a directory; a directory in the way
	// (the run turned it into a file) goes first.
	var cur unix.Stat_t
	if unix.Fstatat(pfd, base, &cur, unix.AT_SYMLINK_NOFOLLOW) == nil && cur.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := a.root.RemoveAll(rel); err != nil {
			return err
		}
	}
	tmp := fmt.Sprintf(".pvisor-apply-%016x", rand.Uint64())
	if err := a.create(pfd, tmp, src, st); err != nil {
		unix.Unlinkat(pfd, tmp, 0)
		return err
	}
	if err := unix.Renameat(pfd, tmp, pfd, base); err != nil {
		unix.Unlinkat(pfd, tmp, 0)
		return err
	}
	if st.Nlink > 1 {
		key := [2]uint64{st.Dev, st.Ino}
		if _, ok := a.links[key]; !ok {
			a.links[key] = rel
		}
	}
	return nil
}

// create makes the entry as tmp in the directory pfd, attributes included.
func (a *applier) create(pfd int, tmp, src string, st *unix.Stat_t) error {
	times := []unix.Timespec{st.Atim, st.Mtim}
	if first, ok := a.links[[2]uint64{st.Dev, st.Ino}]; ok {
		from, err := a.root.Open(path.Dir(first))
		if err != nil {
			return err
		}
		defer from.Close()
		return unix.Linkat(int(from.Fd()), path.Base(first), pfd, tmp, 0)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		fd, err := unix.Openat(pfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		dst := os.NewFile(uintptr(fd), tmp)
		defer dst.Close()
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		if _, err := io.Copy(dst, in); err != nil {
			return err
		}
		if err := setAttrs(fd, src, st); err != nil {
			return err
		}
	case unix.S_IFLNK:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := unix.Symlinkat(target, pfd, tmp); err != nil {
			return err
		}
		if err := unix.Fchownat(pfd, tmp, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	default:
		if err := unix.Mknodat(pfd, tmp, st.Mode, int(st.Rdev)); err != nil {
			return err
		}
		if err := unix.Fchownat(pfd, tmp, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		if err := unix.Fchmodat(pfd, tmp, st.Mode&0o7777, 0); err != nil {
			return err
		}
	}
	return unix.UtimesNanoAt(pfd, tmp, times, unix.AT_SYMLINK_NOFOLLOW)
}

// setAttrs copies owner, mode and extended attributes in the order the
// kernel needs: chown clears setuid bits and file capabilities.
func setAttrs(fd int, src string, st *unix.Stat_t) error {
	if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, st.Mode&0o7777); err != nil {
		return err
	}
	return copyXattrs(fd, src)
}

// copyXattrs copies every extended attribute except overlayfs's own.
func copyXattrs(fd int, src string) error {
	size, err := unix.Llistxattr(src, nil)
	if err != nil || size <= 0 {
		return nil
	}
	buf := make([]byte, size)
	if size, err = unix.Llistxattr(src, buf); err != nil {
		return err
	}
	for _, name := range strings.Split(string(buf[:size]), "\x00") {
		if name == "" || strings.HasPrefix(name, "trusted.overlay.") {
			continue
		}
		n, err := unix.Lgetxattr(src, name, nil)
		if err != nil {
			return err
		}
		val := make([]byte, n)
		if n, err = unix.Lgetxattr(src, name, val); err != nil {
			return err
		}
		err = unix.Fsetxattr(fd, name, val[:n], 0)
		if err != nil && !errors.Is(err, unix.ENOTSUP) {
			return fmt.Errorf("set %s: %w", name, err)
		}
	}
	return nil
}

func (a *applier) dirTimes(rel string) error {
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(a.upper, filepath.FromSlash(rel)), &st); err != nil {
		return err
	}
	parent, err := a.root.Open(path.Dir(rel))
	if err != nil {
		return err
	}
	defer parent.Close()
	return unix.UtimesNanoAt(int(parent.Fd()), path.Base(rel), []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
}
