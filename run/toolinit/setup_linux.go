package toolinit

import (
	"strconv"
	"syscall"
	"unsafe"
)

// setup makes the namespaces private, enters the container root (ct) or
// else detaches the overlay worker's own binds (and the cgroup file
// systems when the tool has a memory cgroup), mounts /proc, brings up
// loopback, and drops privileges, in that order: mounting needs
// CAP_SYS_ADMIN.
func setup(noNet bool, shared []string, hideCgroups bool, ct Container) string {
	if pid := syscall.Getpid(); pid != 1 {
		return "not PID 1 of a new PID namespace (pid " + strconv.Itoa(pid) + ")"
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return "make / private: " + err.Error()
	}
	if ct.Root != "" {
		// The host's tree, the worker's binds and cgroups included, is
		// gone once the container's root is entered.
		if msg := enterRootfs(ct.Root, ct.Binds); msg != "" {
			return msg
		}
		shared, hideCgroups = nil, false
	}
	// In an overlay worker's view of the whole tree, the state and output
	// dirs are the worker's own binds; without them the tool's writes
	// there land in the upper layer. Bound parents first.
	for i := len(shared) - 1; i >= 0; i-- {
		if err := syscall.Unmount(shared[i], syscall.MNT_DETACH); err != nil {
			return "detach " + shared[i] + " from the tool's view: " + err.Error()
		}
	}
	// Root may write cgroup files whatever its capabilities: without them
	// in sight a tool cannot leave the run's memory cgroup.
	if hideCgroups {
		if err := syscall.Unmount("/sys/fs/cgroup", syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
			return "detach /sys/fs/cgroup: " + err.Error()
		}
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return "mount /proc: " + err.Error()
	}
	if noNet {
		if err := LoopbackUp(); err != nil {
			return err.Error()
		}
	}
	return dropPrivileges()
}

// KeptCaps is what a root tool keeps: ownership and permission overrides
// (builds and package managers run as root expect them), uid/gid changes
// (su-style test fixtures), signals and low ports. CAP_SYS_ADMIN (mount),
// CAP_MKNOD, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH (open_by_handle_at) and
// the rest go.
var KeptCaps = []uint{
	0,  // CAP_CHOWN
	1,  // CAP_DAC_OVERRIDE
	3,  // CAP_FOWNER
	4,  // CAP_FSETID
	5,  // CAP_KILL
	6,  // CAP_SETGID
	7,  // CAP_SETUID
	10, // CAP_NET_BIND_SERVICE
	29, // CAP_AUDIT_WRITE
}

const (
	prSetNoNewPrivs = 38
	prCapbsetDrop   = 24
	prCapAmbient    = 47
	prCapAmbientClr = 4
	capLastCap      = 40 // CAP_CHECKPOINT_RESTORE, when the kernel does not say
	capVersion3     = 0x20080522
)

func prctl(op, arg uintptr) syscall.Errno {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, op, arg, 0, 0, 0, 0)
	return errno
}

func dropPrivileges() string {
	if errno := prctl(prSetNoNewPrivs, 1); errno != 0 {
		return "no_new_privs: " + errno.Error()
	}
	var mask uint64
	for _, c := range KeptCaps {
		mask |= 1 << c
	}
	last := uint(capLastCap)
	if b, ok := readSmall("/proc/sys/kernel/cap_last_cap"); ok {
		if n, err := strconv.Atoi(trimSpace(b)); err == nil && n >= 0 && n < 64 {
			last = uint(n)
		}
	}
	for c := uint(0); c <= last; c++ {
		if mask&(1<<c) != 0 {
			continue
		}
		if errno := prctl(prCapbsetDrop, uintptr(c)); errno != 0 && errno != syscall.EINVAL {
			return "drop capability " + strconv.Itoa(int(c)) + " from the bounding set: " + errno.Error()
		}
	}
	_, _, _ = syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClr, 0, 0, 0, 0)
	hdr := struct {
		version uint32
		pid     int32
	}{version: capVersion3}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return "capget: " + errno.Error()
	}
	for i := range data {
		m := uint32(mask >> (32 * i))
		data[i].effective &= m
		data[i].permitted &= m
		data[i].inheritable &= m
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return "capset: " + errno.Error()
	}
	return ""
}

// LoopbackUp brings lo up in the calling thread's network namespace, which
// starts with it down.
func LoopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return msgError("loopback: " + err.Error())
	}
	defer syscall.Close(fd)
	var ifr [40]byte // struct ifreq: the name, then the flags (short)
	copy(ifr[:], "lo")
	if errno := ioctl(fd, syscall.SIOCGIFFLAGS, &ifr); errno != 0 {
		return msgError("loopback flags: " + errno.Error())
	}
	flags := *(*uint16)(unsafe.Pointer(&ifr[16])) | syscall.IFF_UP
	*(*uint16)(unsafe.Pointer(&ifr[16])) = flags
	if errno := ioctl(fd, syscall.SIOCSIFFLAGS, &ifr); errno != 0 {
		return msgError("loopback up: " + errno.Error())
	}
	return nil
}

func ioctl(fd int, req uintptr, ifr *[40]byte) syscall.Errno {
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(ifr)))
	return errno
}

// memoryCgroup is the run's memory cgroup as the init sees it.
type memoryCgroup struct {
	version int
	limit   uint64
	events  int // memory.events (v2) or memory.oom_control (v1), open
}

// openMemory joins the v1 cgroup at dir (a v2 init is cloned into its
// cgroup) and opens the file that counts OOM kills: the init keeps it
// open, because it detaches the cgroup file systems from the tool's view.
func openMemory(dir string, limit uint64) (*memoryCgroup, string) {
	m := &memoryCgroup{version: 1, limit: limit}
	var st syscall.Stat_t
	if syscall.Stat(dir+"/memory.events", &st) == nil {
		m.version = 2
	}
	file := dir + "/memory.events"
	if m.version == 1 {
		// Only "0" written to "tasks" (this thread) skips the kernel's
		// global threadgroup lock, whose write side waits for an RCU
		// grace period: a process or a thread named by its id doubled
		// the cost of a call.
		fd, err := syscall.Open(dir+"/tasks", syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
		if err == nil {
			_, err = syscall.Write(fd, []byte("0"))
			syscall.Close(fd)
		}
		if err != nil {
			return nil, "join the run's memory cgroup: " + err.Error()
		}
		file = dir + "/memory.oom_control"
	}
	fd, err := syscall.Open(file, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, "memory cgroup: open " + file + ": " + err.Error()
	}
	m.events = fd
	return m, ""
}

func (m *memoryCgroup) mechanism() string {
	if m.version == 2 {
		return "cgroup-v2"
	}
	return "cgroup-v1-memory"
}

// oomKills reads the oom_kill count from the events file, afresh.
func (m *memoryCgroup) oomKills() uint64 {
	var buf [4096]byte
	n, err := syscall.Pread(m.events, buf[:], 0)
	if n <= 0 || err != nil {
		return 0
	}
	return OOMKillCount(string(buf[:n]))
}

// OOMKillCount is the oom_kill line's count in a memory.events or
// memory.oom_control file's text, 0 without one.
func OOMKillCount(text string) uint64 {
	for len(text) > 0 {
		line := text
		if i := indexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		const key = "oom_kill "
		if len(line) > len(key) && line[:len(key)] == key {
			n, _ := strconv.ParseUint(trimSpace(line[len(key):]), 10, 64)
			return n
		}
	}
	return 0
}

// readSmall reads a file of at most 4 KiB.
func readSmall(path string) (string, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer syscall.Close(fd)
	var buf [4096]byte
	n, err := syscall.Read(fd, buf[:])
	if err != nil || n < 0 {
		return "", false
	}
	return string(buf[:n]), true
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func trimSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\n' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\n' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// msgError is an error without package errors' or fmt's imports.
type msgError string

func (e msgError) Error() string { return string(e) }
