package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// rootViewOff is set by tests for the control run that shows a write
// outside the workspace reaching the host when there is no root view.
var rootViewOff = false

// pseudoTrees are the kernel's own trees: never overlaid, except tmpfs
// mounts below /dev. /proc is mounted fresh (by init and by each tool's
// init, for their PID namespaces), /dev and /sys are bound read-only.
var pseudoTrees = []string{"/proc", "/sys", "/dev"}

// rootPart is one filesystem of the host tree captured in the root view:
// an overlay whose lower layer is Mount and whose upper layer is Upper.
type rootPart struct {
	Mount string `json:"mount"`
	Upper string `json:"upper"`
	Work  string `json:"work"`
}

// ToolView reports whether this worker runs in the view of the whole file
// tree, and why not. When it does, every process it starts does too, and
// shared are the binds of Options.Shared that a replayed tool's init must
// detach in its own mount namespace (DetachShared), so that the tool's
// writes there land in the upper layer like the rest.
func ToolView() (shared []string, active bool, missing string) {
	if childSpec == nil {
		return nil, false, ""
	}
	if !childSpec.View {
		return nil, false, childSpec.RootMissing
	}
	return childSpec.Shared, true, ""
}

// DetachShared removes the shared binds from the calling process's own,
// private mount namespace (a tool's init, before it drops CAP_SYS_ADMIN).
func DetachShared(shared []string) error {
	for _, d := range slices.Backward(shared) { // bound parents first
		if err := unix.Unmount(d, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("detach %s from the tool's view: %w", d, err)
		}
	}
	return nil
}

// buildRootView mounts, at l.Root, the host's file tree as the run should
// see it: every writable filesystem of the tree (/ and the real
// filesystems mounted below it) as an overlay whose upper layer is in the
// state dir, read-only filesystems bound read-only, /dev and /sys bound
// read-only (/dev/shm overlaid like the rest), the merged workspace bound
// at its own path, the layers themselves hidden under an empty read-only
// tmpfs, and the shared dirs bound for real on top. It runs once per run,
// in init, before init enters it (enterView) and starts the worker. On any
// failure what was mounted is detached and the error says what the kernel
// refused: the run goes on without the view and the result says so.
func buildRootView(cfg Config, l Layout, shared []string) (err error) {
	defer func() {
		if err != nil {
			unix.Unmount(l.Root, unix.MNT_DETACH) // EINVAL when nothing was mounted
		}
	}()
	for _, d := range []string{l.Root, l.RootUpper, l.RootWork} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	mounts, err := readMountinfo()
	if err != nil {
		return fmt.Errorf("read the mount table: %w", err)
	}
	var parts []rootPart
	for i, m := range viewMounts(mounts, cfg, l) {
		if i == 0 && m.MountPoint != "/" {
			return errors.New("no / in the mount table")
		}
		target := filepath.Join(l.Root, m.MountPoint)
		// Overlayfs layers are directories; a file bind mount (Docker's
		// /etc/hosts, /etc/resolv.conf) is kept, read-only.
		if m.readOnly() || !isDir(m.MountPoint) {
			if err := bindReadOnly(m.MountPoint, target, false); err != nil {
				return err
			}
		} else {
			n := strconv.Itoa(len(parts))
			p := rootPart{Mount: m.MountPoint, Upper: filepath.Join(l.RootUpper, n), Work: filepath.Join(l.RootWork, n)}
			if err := preparePart(p); err != nil {
				return err
			}
			if err := mountOverlay(Config{Path: p.Mount}, Layout{Upper: p.Upper, Work: p.Work}, target); err != nil {
				if errors.Is(err, unix.ELOOP) {
					// Some kernels refuse an upper layer inside its own lower one.
					err = fmt.Errorf("%w (the state dir is on %s itself: put --state-dir on another filesystem, e.g. a tmpfs)", err, p.Mount)
				}
				return err
			}
			parts = append(parts, p)
		}
		if i > 0 {
			continue
		}
		// Right over /, so that the tmpfs mounts below /dev (/dev/shm)
		// get their own overlays on top of the read-only /dev.
		if err := bindReadOnly("/dev", filepath.Join(l.Root, "dev"), true); err != nil {
			return err
		}
		// Recursive: the worker makes the tools' memory cgroup below it.
		if err := bindReadOnly("/sys", filepath.Join(l.Root, "sys"), true); err != nil {
			return err
		}
	}
	if err := unix.Mount(cfg.Path, filepath.Join(l.Root, cfg.Path), "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind the workspace into the root view: %w", err)
	}
	// The layers stay out of the tools' reach: under the overlay of their
	// filesystem they would be visible (and writable into the upper layer)
	// at their path.
	if err := unix.Mount("tmpfs", filepath.Join(l.Root, l.Dir), "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0755"); err != nil {
		return fmt.Errorf("hide the layers from the root view: %w", err)
	}
	covered := false
	for _, d := range shared {
		if err := unix.Mount(d, filepath.Join(l.Root, d), "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s into the view: %w", d, err)
		}
		covered = covered || within(cfg.Path, d)
	}
	// A workspace inside a shared dir (a batch's unpacked lower inside the
	// output dir) is bound again on top, or the worker would see the real
	// directory there. A tool's DetachShared takes this bind along and
	// finds the first one again.
	if covered {
		if err := unix.Mount(cfg.Path, filepath.Join(l.Root, cfg.Path), "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind the workspace into the view: %w", err)
		}
	}
	raw, err := json.Marshal(parts)
	if err != nil {
		return err
	}
	return os.WriteFile(l.RootParts, raw, 0o600)
}

// viewMounts are the mounts the root view rebuilds, parents first: the
// topmost mount at each point outside the pseudo trees, the workspace and
// the state dir's layers.
func viewMounts(mounts []mountEntry, cfg Config, l Layout) []mountEntry {
	top := map[string]mountEntry{}
	for _, m := range mounts {
		top[m.MountPoint] = m // later entries are mounted over earlier ones
	}
	var out []mountEntry
	for mp, m := range top {
		skip := within(mp, cfg.Path) || within(mp, l.Dir)
		for _, t := range pseudoTrees {
			// A tmpfs below /dev (/dev/shm) is a real writable filesystem.
			skip = skip || within(mp, t) && !(t == "/dev" && mp != t && m.FSType == "tmpfs")
		}
		if !skip {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MountPoint < out[j].MountPoint })
	return out
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func (m mountEntry) readOnly() bool {
	for _, o := range strings.Split(m.MountOpts, ",") {
		if o == "ro" {
			return true
		}
	}
	return false
}

// preparePart creates a part's layers; the upper directory gets the mode
// and owner of the filesystem's root, which it becomes in the view.
func preparePart(p rootPart) error {
	for _, d := range []string{p.Upper, p.Work} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(p.Mount, &st); err != nil {
		return err
	}
	if err := unix.Chown(p.Upper, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	return unix.Chmod(p.Upper, st.Mode&0o7777)
}

func bindReadOnly(src, target string, recursive bool) error {
	flags := uintptr(unix.MS_BIND)
	if recursive {
		flags |= unix.MS_REC
	}
	if err := unix.Mount(src, target, "", flags, ""); err != nil {
		return fmt.Errorf("bind %s into the root view: %w", src, err)
	}
	if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID, ""); err != nil {
		return fmt.Errorf("make %s read-only in the root view: %w", src, err)
	}
	return nil
}

// enterView makes the view init's (and so the worker's) root, with a /proc
// of init's PID namespace, and changes to dir there.
func enterView(root, dir string) error {
	if err := enterRoot(root); err != nil {
		return err
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc in the view: %w", err)
	}
	if err := unix.Chdir(dir); err != nil {
		return fmt.Errorf("chdir %s in the view: %w", dir, err)
	}
	return nil
}

// enterRoot makes root the calling process's /, in a mount namespace of
// its own that is already private. The old root is detached, so nothing
// outside the view stays reachable.
func enterRoot(root string) error {
	if err := unix.Chdir(root); err != nil {
		return fmt.Errorf("enter the root view: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root into the root view: %w", err)
	}
	// The old root is now mounted over the new one, at "/".
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's root: %w", err)
	}
	return unix.Chdir("/")
}

// OutsideChanges lists what the run changed outside the workspace, as
// absolute paths, from the root view's upper layers. Empty when the run had
// no root view. Call it after Run returned.
func OutsideChanges(l Layout) ([]Change, error) {
	parts, err := readParts(l)
	if err != nil || len(parts) == 0 {
		return nil, err
	}
	var out []Change
	for _, p := range parts {
		w := &walker{upper: p.Upper}
		if err := w.walk("", lowerDir{p.Mount}, false); err != nil {
			return nil, fmt.Errorf("overlayfs: list changes outside the workspace: %w", err)
		}
		for _, c := range w.out {
			c.Path = path.Join(p.Mount, c.Path)
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func readParts(l Layout) ([]rootPart, error) {
	if l.RootParts == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(l.RootParts)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("overlayfs: %w", err)
	}
	var parts []rootPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, fmt.Errorf("overlayfs: %s: %w", l.RootParts, err)
	}
	return parts, nil
}

// removeRootLayers removes the root view's layers and its (unmounted)
// mount point.
func removeRootLayers(l Layout) error {
	for _, p := range []string{l.RootUpper, l.RootWork, l.RootParts, l.Root} {
		if p == "" {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}
