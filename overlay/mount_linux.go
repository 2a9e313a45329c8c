package overlay

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// useLegacyMount makes mountOverlay use mount(2) directly. Kernels before 5.2
// (no fsopen) take that path on their own; tests set it to cover it here.
var useLegacyMount = false

// forcedOff are overlay features whose upper-layer encoding Changes and
// Commit cannot read back as plain files: redirect_dir stores a renamed
// directory as a pointer to the lower one, metacopy stores chmod'ed files
// without their data, and index ties the upper layer to lower inode
// numbers. Each is switched off when the kernel knows it (its module
// parameter exists), whatever the distribution's default. With
// redirect_dir off, renaming a directory that came from a lower layer fails
// with EXDEV and tools fall back to copying, as they do across filesystems.
var forcedOff = []string{"redirect_dir", "metacopy", "index"}

// Mount mounts the merged view of cfg over cfg.Path using the layers in l.
// The caller must already be in a private mount namespace (ChildMain's init
// does this); Mount refuses to run in the namespace the process started in,
// because there the mount would change the host's view of the workspace.
//
// A process whose working directory is inside cfg.Path keeps seeing the
// lower directory until it changes directory again; ChildMain re-enters it.
func Mount(cfg Config, l Layout) error {
	if err := requirePrivateNamespace(); err != nil {
		return err
	}
	return mountOverlay(cfg, l, cfg.Path)
}

// Unmount removes the overlay mounted at path by Mount, lazily if it is busy.
// It refuses to touch anything that is not an overlay.
func Unmount(path string) error {
	if err := requirePrivateNamespace(); err != nil {
		return err
	}
	mounts, err := readMountinfo()
	if err != nil {
		return fmt.Errorf("unmount %s: %w", path, err)
	}
	at := mountsAt(mounts, path)
	if len(at) == 0 || at[len(at)-1].FSType != "overlay" {
		return fmt.Errorf("unmount %s: no overlay is mounted there", path)
	}
	err = unix.Unmount(path, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(path, unix.MNT_DETACH)
	}
	if err != nil {
		return fmt.Errorf("unmount %s: %w", path, err)
	}
	return nil
}

// requirePrivateNamespace compares the calling thread's mount namespace with
// the one the process was started in (for a namespace child: the parent's).
func requirePrivateNamespace() error {
	cur, err := os.Readlink("/proc/thread-self/ns/mnt")
	if err != nil {
		return fmt.Errorf("cannot read this thread's mount namespace: %w", err)
	}
	origin := ""
	if childSpec != nil {
		origin = childSpec.ParentMntNS
	} else if origin, err = os.Readlink("/proc/self/ns/mnt"); err != nil {
		return fmt.Errorf("cannot read the process's mount namespace: %w", err)
	}
	if cur == origin {
		return errors.New("refusing to mount or unmount in the mount namespace pvisor started in, where the host would see it: use overlay.Run")
	}
	return nil
}

// mountOverlay mounts cfg's layers over target. Every layer is opened first and named by its
// /proc/self/fd link: that avoids overlayfs's ':' and ',' escaping rules and
// fsconfig's 256-byte limit per value, whatever the real paths look like.
func mountOverlay(cfg Config, l Layout, target string) error {
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	ref := func(p string) (string, error) {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("open layer %s: %w", p, err)
		}
		fds = append(fds, fd)
		return fmt.Sprintf("/proc/self/fd/%d", fd), nil
	}
	var lowers []string
	for _, p := range cfg.lowers() {
		r, err := ref(p)
		if err != nil {
			return err
		}
		lowers = append(lowers, r)
	}
	upper, err := ref(l.Upper)
	if err != nil {
		return err
	}
	work, err := ref(l.Work)
	if err != nil {
		return err
	}
	opts := [][2]string{
		{"lowerdir", strings.Join(lowers, ":")},
		{"upperdir", upper},
		{"workdir", work},
	}
	for _, name := range forcedOff {
		if _, err := os.Stat("/sys/module/overlay/parameters/" + name); err == nil {
			opts = append(opts, [2]string{name, "off"})
		}
	}
	flags := inheritedFlags(cfg.Path)
	if !useLegacyMount {
		err = mountFsopen(target, opts, flags)
		if !errors.Is(err, unix.ENOSYS) {
			return err
		}
	}
	return mountLegacy(target, opts, flags)
}

// inheritedFlags keeps nosuid, nodev and noexec of the mount that holds the
// workspace, so the merged view is not more permissive than the original.
type mountFlags struct{ attr, ms uint64 }

func inheritedFlags(path string) mountFlags {
	var st unix.Statfs_t
	var f mountFlags
	if unix.Statfs(path, &st) != nil {
		return f
	}
	for _, m := range []struct{ st, attr, ms uint64 }{
		{unix.ST_NOSUID, unix.MOUNT_ATTR_NOSUID, unix.MS_NOSUID},
		{unix.ST_NODEV, unix.MOUNT_ATTR_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MOUNT_ATTR_NOEXEC, unix.MS_NOEXEC},
	} {
		if uint64(st.Flags)&m.st != 0 {
			f.attr |= m.attr
			f.ms |= m.ms
		}
	}
	return f
}

// mountFsopen uses the new mount API because it reports why a mount failed
// (e.g. "filesystem on ... not supported as upperdir") instead of EINVAL.
func mountFsopen(target string, opts [][2]string, flags mountFlags) error {
	fd, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.FsconfigSetString(fd, "source", "pvisor"); err != nil {
		return mountErr(target, "set source", err, kernelLog(fd))
	}
	for _, o := range opts {
		if err := unix.FsconfigSetString(fd, o[0], o[1]); err != nil {
			return mountErr(target, "set "+o[0], err, kernelLog(fd))
		}
	}
	if err := unix.FsconfigCreate(fd); err != nil {
		return mountErr(target, "create", err, kernelLog(fd))
	}
	mfd, err := unix.Fsmount(fd, unix.FSMOUNT_CLOEXEC, int(flags.attr))
	if err != nil {
		return mountErr(target, "fsmount", err, kernelLog(fd))
	}
	defer unix.Close(mfd)
	if err := unix.MoveMount(mfd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return mountErr(target, "move_mount", err, "")
	}
	return nil
}

func mountLegacy(target string, opts [][2]string, flags mountFlags) error {
	parts := make([]string, len(opts))
	for i, o := range opts {
		parts[i] = o[0] + "=" + o[1]
	}
	if err := unix.Mount("pvisor", target, "overlay", uintptr(flags.ms), strings.Join(parts, ",")); err != nil {
		return mountErr(target, "mount", err, "")
	}
	return nil
}

// kernelLog drains the messages the kernel queued on an fs context.
func kernelLog(fd int) string {
	var msgs []string
	buf := make([]byte, 4096)
	for range 32 {
		n, err := unix.Read(fd, buf)
		if err != nil || n <= 0 {
			break
		}
		msgs = append(msgs, strings.TrimSpace(string(buf[:n])))
	}
	return strings.Join(msgs, "; ")
}

func mountErr(target, step string, err error, klog string) error {
	msg := fmt.Sprintf("mount overlay on %s: %s: %v", target, step, err)
	if klog != "" {
		msg += " (kernel: " + klog + ")"
	}
	switch {
	case strings.Contains(klog, "not supported as upperdir"):
		msg += ": put --state-dir on a tmpfs, ext4 or xfs filesystem"
	case errors.Is(err, unix.EPERM):
		msg += ": overlayfs needs CAP_SYS_ADMIN in the initial user namespace; run as root outside a user namespace"
	case errors.Is(err, unix.ELOOP) || strings.Contains(klog, "overlapping"):
		msg += ": the state dir and the workspace or compose layers overlap; keep them apart"
	case errors.Is(err, unix.ENODEV):
		msg += ": the kernel has no overlay filesystem; load it with `modprobe overlay`"
	}
	return &mountError{msg: msg, err: err}
}

// mountError keeps the errno for callers that explain it differently.
type mountError struct {
	msg string
	err error
}

func (e *mountError) Error() string { return e.msg }
func (e *mountError) Unwrap() error { return e.err }
