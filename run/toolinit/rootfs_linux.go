package toolinit

import (
	"strconv"
	"syscall"
)

// Container is a call's container root (--executor container); the zero
// value runs the tool in the Runner's own tree.
type Container struct {
	// Root is the root file system's directory as the Runner sees it
	// (absolute): the init binds it, enters it with pivot_root and gives
	// it a fresh /proc and a minimal /dev.
	Root string
	// Binds are host paths visible at their own path inside.
	Binds []string
	// Dir is the tool's working directory, as the container sees it: the
	// host need not have it.
	Dir string
}

// containerDevices are the device nodes a container's /dev gets, bound
// from the host's: what shells and build tools open by name. No disks, no
// /dev/mem, no /dev/kmsg.
var containerDevices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// devLinks are /dev's symlinks into the call's own /proc.
var devLinks = [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}}

// enterRootfs makes root (a directory of this mount namespace, private by
// now) the root of the calling init: binds at their own paths, a minimal
// /dev, then pivot_root and the old root detached. /proc is mounted by
// the caller, after. Targets are resolved inside root (ResolveIn), so a
// symlink of an untrusted image cannot turn a bind onto a host path.
func enterRootfs(root string, binds []string) string {
	// A bind onto itself: pivot_root wants new_root to be a mount point.
	if err := syscall.Mount(root, root, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return "container root " + root + ": bind: " + err.Error()
	}
	for _, b := range binds {
		if msg := bindInto(root, b, b); msg != "" {
			return msg
		}
	}
	dev, msg := mkdirIn(root, "/dev")
	if msg != "" {
		return msg
	}
	if err := syscall.Mount("tmpfs", dev, "tmpfs", syscall.MS_NOSUID|syscall.MS_NOEXEC, "mode=755,size=1m"); err != nil {
		return "container /dev: " + err.Error()
	}
	for _, d := range containerDevices {
		var st syscall.Stat_t
		if syscall.Stat("/dev/"+d, &st) != nil {
			continue // a host without it (tty with no controlling terminal is fine)
		}
		if msg := bindInto(root, "/dev/"+d, "/dev/"+d); msg != "" {
			return msg
		}
	}
	for _, l := range devLinks {
		if err := syscall.Symlink(l[1], dev+"/"+l[0]); err != nil {
			return "container /dev/" + l[0] + ": " + err.Error()
		}
	}
	shm := dev + "/shm"
	if err := syscall.Mkdir(shm, 0o1777); err != nil {
		return "container /dev/shm: " + err.Error()
	}
	if err := syscall.Mount("tmpfs", shm, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=1777,size=64m"); err != nil {
		return "container /dev/shm: " + err.Error()
	}
	if _, msg := mkdirIn(root, "/proc"); msg != "" {
		return msg
	}
	if err := syscall.Chdir(root); err != nil {
		return "container root: " + err.Error()
	}
	// pivot_root(".", ".") stacks the old root under the new one at "/";
	// detaching "." then drops it, with every host mount below it.
	if err := syscall.PivotRoot(".", "."); err != nil {
		return "pivot_root into " + root + ": " + err.Error()
	}
	if err := syscall.Unmount(".", syscall.MNT_DETACH); err != nil {
		return "detach the host's root: " + err.Error()
	}
	if err := syscall.Chdir("/"); err != nil {
		return "container root: " + err.Error()
	}
	return ""
}

// mkdirIn creates the directory p (absolute, as the container sees it)
// under root and returns its path here.
func mkdirIn(root, p string) (string, string) {
	t, err := ResolveIn(root, p)
	if err != nil {
		return "", "container " + p + ": " + err.Error()
	}
	if err := mkdirAll(t, 0o755); err != nil {
		return "", "container " + p + ": " + err.Error()
	}
	return t, ""
}

// bindInto binds host path src at dst inside root, creating the mount
// point (a directory or an empty file, as src is).
func bindInto(root, src, dst string) string {
	var st syscall.Stat_t
	if err := syscall.Stat(src, &st); err != nil {
		return "container bind " + src + ": " + err.Error()
	}
	t, err := ResolveIn(root, dst)
	if err != nil {
		return "container bind " + dst + ": " + err.Error()
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		err = mkdirAll(t, 0o755)
	} else if err = mkdirAll(dirOf(t), 0o755); err == nil {
		var fd int
		if fd, err = syscall.Open(t, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644); err == nil {
			syscall.Close(fd)
		}
	}
	if err != nil {
		return "container bind " + dst + ": mount point: " + err.Error()
	}
	if err := syscall.Mount(src, t, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return "container bind " + dst + ": " + err.Error()
	}
	return ""
}

// mkdirAll creates the absolute directory p and its missing parents, as
// os.MkdirAll: what exists (most of a deep path) costs one stat; a name
// that exists must be a directory (or a link to one).
func mkdirAll(p string, mode uint32) error {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err == nil {
		if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			return nil
		}
		return syscall.ENOTDIR
	}
	if parent := dirOf(p); parent != p {
		if err := mkdirAll(parent, mode); err != nil {
			return err
		}
	}
	if err := syscall.Mkdir(p, mode); err != nil {
		// Made meanwhile (by a tool of another call of the run)?
		if syscall.Lstat(p, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			return nil
		}
		return err
	}
	return nil
}

// ResolveIn resolves p (absolute, as a process whose root is root sees it)
// to a path under root, following symlinks as that process's kernel would:
// an absolute target starts again at root, ".." never climbs above it. The
// last component is resolved too when it is a symlink; a missing component
// ends the walk (the rest is appended as it is). p is cleaned lexically
// first, as filepath.Clean would. root must be clean.
func ResolveIn(root, p string) (string, error) {
	rest := splitPath(cleanAbs(p))
	var done []string // resolved components below root
	links, missing := 0, false
	var buf [4096]byte // PATH_MAX: no link target is longer
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		if missing {
			// Nothing to follow below a missing name.
			done = append(done, c)
			continue
		}
		cand := joinUnder(root, append(done, c))
		var st syscall.Stat_t
		err := syscall.Lstat(cand, &st)
		if err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFLNK {
			done = append(done, c)
			missing = err != nil
			continue
		}
		if links++; links > 40 {
			return "", syscall.ELOOP
		}
		n, err := syscall.Readlink(cand, buf[:])
		if err != nil {
			return "", err
		}
		if n >= len(buf) {
			return "", syscall.ENAMETOOLONG
		}
		target := string(buf[:n])
		if len(target) > 0 && target[0] == '/' {
			done = nil
		}
		rest = append(splitPath(target), rest...)
	}
	return joinUnder(root, done), nil
}

// joinUnder is root with the plain names parts below it.
func joinUnder(root string, parts []string) string {
	s := root
	for _, c := range parts {
		if s != "/" {
			s += "/"
		}
		s += c
	}
	return s
}

// cleanAbs is filepath.Clean("/" + p).
func cleanAbs(p string) string {
	var out []string
	for _, c := range splitPath(p) {
		switch c {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, c)
		}
	}
	return joinUnder("/", out)
}

func splitPath(p string) []string { return split(p, '/') }

func split(s string, sep byte) []string {
	var out []string
	for {
		i := indexByte(s, sep)
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
}

// dirOf is the parent of the absolute path p.
func dirOf(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

// lookPath finds the bare command name among the absolute directories of
// the PATH in env, as exec.LookPath would (relative entries, which it
// refuses with ErrDot, are skipped): in a container, the container's
// files, which the Runner cannot see before the call's root is entered.
func lookPath(name string, env []string) (string, string) {
	path := ""
	for _, kv := range env {
		if len(kv) >= 5 && kv[:5] == "PATH=" {
			path = kv[5:] // the first, as getenv's
			break
		}
	}
	for _, d := range split(path, ':') {
		if d == "" || d[0] != '/' {
			continue
		}
		p := d + "/" + name
		if d[len(d)-1] == '/' {
			p = d + name
		}
		var st syscall.Stat_t
		if syscall.Stat(p, &st) != nil || st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			continue
		}
		if syscall.Access(p, 1 /* X_OK */) == nil {
			return p, ""
		}
	}
	return "", "exec: " + strconv.Quote(name) + ": executable file not found in $PATH"
}
