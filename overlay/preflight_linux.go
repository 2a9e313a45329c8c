package overlay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

const capSysAdmin = 21 // linux/capability.h

// Preflight checks everything that can be checked before a mount, and
// returns cfg with absolute, symlink-free paths and a parsed commit mode.
// Every error is a *PreflightError that says what to change.
func Preflight(cfg Config, l Layout) (Config, error) {
	if InNamespace() {
		return cfg, preflightErr("nested", "this process already runs inside an overlay namespace; run the inner command without --overlayfs-path")
	}
	mode, err := ParseCommitMode(string(cfg.Commit))
	if err != nil {
		return cfg, preflightErr("commit", "%v", err)
	}
	cfg.Commit = mode
	if cfg.Path == "" {
		return cfg, preflightErr("path", "no workspace given: set --overlayfs-path or [overlayfs] path")
	}
	if cfg.Path, err = resolveDir("overlayfs path", cfg.Path); err != nil {
		return cfg, err
	}
	if cfg.Path == "/" {
		return cfg, preflightErr("path", "refusing to mount over /: point --overlayfs-path at the workspace directory")
	}
	compose := make([]string, 0, len(cfg.Compose))
	seen := map[string]bool{cfg.Path: true}
	for _, c := range cfg.Compose {
		dir, err := resolveDir("overlayfs compose layer", c)
		if err != nil {
			return cfg, err
		}
		if seen[dir] {
			return cfg, preflightErr("compose", "layer %s is given twice (as path or compose): list each directory once", dir)
		}
		seen[dir] = true
		compose = append(compose, dir)
	}
	cfg.Compose = compose

	if err := checkLayout(cfg, l); err != nil {
		return cfg, err
	}
	if ok, err := hasCapability(capSysAdmin); err != nil || !ok {
		return cfg, preflightErr("capability", "mounting overlayfs needs CAP_SYS_ADMIN: run pvisor as root (sudo), or give its container --privileged or --cap-add SYS_ADMIN")
	}
	if !kernelHasOverlay() {
		return cfg, preflightErr("kernel", "this kernel has no overlay filesystem (none in /proc/filesystems): load it with `modprobe overlay`, or run without --overlayfs-path")
	}
	mounts, err := readMountinfo()
	if err != nil {
		return cfg, preflightErr("mountinfo", "cannot read the mount table: %v", err)
	}
	if below := mountsBelow(mounts, cfg.Path); len(below) > 0 {
		return cfg, preflightErr("submounts", "%s has mount points inside it (%s); overlayfs does not include them, so the run would see the directories underneath: unmount them or choose a workspace without mounts", cfg.Path, strings.Join(below, ", "))
	}
	return cfg, nil
}

// checkLayout rejects layer placements overlayfs would refuse or misuse.
func checkLayout(cfg Config, l Layout) error {
	for _, p := range []string{l.Dir, l.Upper, l.Work} {
		if !filepath.IsAbs(p) {
			return preflightErr("state-dir", "layer path %q is not absolute: build the layout with overlay.NewLayout", p)
		}
	}
	for _, p := range []string{l.Dir, l.Upper, l.Work} {
		state := resolveExisting(p)
		for _, lower := range cfg.lowers() {
			if within(state, lower) {
				return preflightErr("state-dir", "state dir %s is inside the lower layer %s; an upper layer inside a lower one is invalid (the run would write into itself): put --state-dir outside the workspace, e.g. /tmp/pvisor-state", state, lower)
			}
			if within(lower, state) {
				return preflightErr("state-dir", "lower layer %s is inside the state dir %s: keep the workspace and compose layers outside --state-dir", lower, state)
			}
		}
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(nearestExisting(l.Dir), &sfs); err == nil && int64(sfs.Type) == unix.OVERLAYFS_SUPER_MAGIC {
		return preflightErr("state-fs", "state dir %s is on an overlayfs (as inside a Docker container), which overlayfs cannot use for its upper layer: put --state-dir on a tmpfs or a volume, e.g. /dev/shm/pvisor-state", l.Dir)
	}
	if empty, err := dirEmptyOrMissing(l.Upper); err != nil {
		return preflightErr("upper", "cannot read upper dir: %v", err)
	} else if !empty {
		return preflightErr("upper", "upper dir %s holds changes from an earlier run: commit or drop them first, or use a new --state-dir", l.Upper)
	}
	if empty, err := dirEmptyOrMissing(l.RootUpper); err != nil {
		return preflightErr("upper", "cannot read upper dir: %v", err)
	} else if !empty {
		return preflightErr("upper", "upper dir %s holds changes outside the workspace from an earlier run: inspect and delete it, or use a new --state-dir", l.RootUpper)
	}
	return nil
}

func preflightErr(check, format string, args ...any) error {
	return &PreflightError{Check: check, Msg: fmt.Sprintf(format, args...)}
}

// resolveDir makes p absolute and symlink-free and checks it is a directory,
// because the mount target and the overlap checks need the real path.
func resolveDir(what, p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", preflightErr("path", "%s %q: %v", what, p, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", preflightErr("path", "%s %s does not exist: create it or fix the path", what, abs)
	} else if err != nil {
		return "", preflightErr("path", "%s %s: %v", what, abs, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", preflightErr("path", "%s %s: %v", what, real, err)
	}
	if !fi.IsDir() {
		return "", preflightErr("path", "%s %s is not a directory: point it at the workspace directory", what, real)
	}
	return real, nil
}

// nearestExisting is p or its closest existing ancestor.
func nearestExisting(p string) string {
	for {
		if _, err := os.Lstat(p); err == nil || p == "/" || p == "." {
			return p
		}
		p = filepath.Dir(p)
	}
}

// resolveExisting resolves symlinks in the part of p that exists, so a state
// dir reached through a symlink into the workspace is still caught.
func resolveExisting(p string) string {
	base := nearestExisting(p)
	real, err := filepath.EvalSymlinks(base)
	if err != nil {
		return p
	}
	rest, err := filepath.Rel(base, p)
	if err != nil {
		return p
	}
	return filepath.Join(real, rest)
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

func dirEmptyOrMissing(dir string) (bool, error) {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if len(names) > 0 {
		return false, nil
	}
	if err == io.EOF {
		return true, nil
	}
	return false, err
}

// hasCapability reads the effective set rather than testing euid 0, because
// a root process in a container can lack CAP_SYS_ADMIN.
func hasCapability(bit uint) (bool, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, err
			}
			return mask&(1<<bit) != 0, nil
		}
	}
	return false, errors.New("no CapEff line in /proc/self/status")
}

func kernelHasOverlay() bool {
	data, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[len(f)-1] == "overlay" {
			return true
		}
	}
	return false
}
