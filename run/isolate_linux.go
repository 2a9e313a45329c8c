package run

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/pvisor/pvisor/overlay"
	"github.com/pvisor/pvisor/run/egress/nsrelay"
)

// Isolation keeps a replayed tool away from pvisor: a trajectory is
// untrusted input, and its commands run as whoever runs pvisor.
type Isolation struct {
	// Enabled runs every process through a small init (this binary
	// re-executed, see init) that is PID 1 of new PID and mount namespaces with a fresh
	// /proc, so no process outside the call is visible (pvisor's own
	// environment, the overlay worker's, other calls'); it sets
	// no_new_privs and keeps only the capabilities in keptCaps, so tools
	// cannot unmount or remount the overlay, create device nodes or trace.
	Enabled bool
	// DataLimit caps each tool process's data segment in bytes
	// (RLIMIT_DATA: heap and private writable mappings); 0 means no limit.
	DataLimit uint64
	// NoNetwork gives the tools a network namespace of their own with only
	// loopback, up.
	NoNetwork bool
	// Egress, with NoNetwork, is the tools' only way out of their network
	// namespace: each init listens on nsrelay.NamespaceAddr inside it and
	// hands every connection to this proxy (nsrelay.Relay), and the tools'
	// HTTP_PROXY/HTTPS_PROXY point there. Connections are attributed to the
	// call current when the process was started.
	Egress EgressProxy
	// Memory, when set, is the run's memory cgroup: each call's init joins
	// it before starting the tool, and a tool the OOM killer ends gets a
	// line on its stderr that says so. DataLimit is then usually 0.
	Memory *MemoryCgroup
	// WriteRoots, when set, are the only paths the tools may write under
	// (Landlock, --policy enforce; see landlock_linux.go).
	WriteRoots []string
	// Rootfs, when set (--executor container), is the root file system the
	// tools run in: a directory this process sees (the run's overlay of the
	// user's rootfs), which each call's init binds, enters with pivot_root
	// and gives a fresh /proc and a minimal /dev. Binds are the host paths
	// visible at the same path inside (the workspace; the Runner adds its
	// temp dir). Tool paths and working directories are the container's.
	Rootfs string
	Binds  []string
}

// EgressProxy is the egress proxy (egress.Proxy) as the init needs it: an
// interface, so that this package, linked into every call's init, does not
// import the proxy's HTTP packages, whose package init would run first.
type EgressProxy interface {
	// Attach returns the init's end of the channel, and the function to
	// call once the init started (true) or could not (false).
	Attach() (child *os.File, start func(ok bool), err error)
}

// shimArg0 marks the re-executed init (see init); argv[0] rather than an
// environment variable, because the tool inherits the environment.
const shimArg0 = "pvisor-tool-init"

// shimStatusFD is the pipe on which the init reports the tool's exit.
const shimStatusFD = 3

// shimEgressFD is the init's end of the egress proxy's socketpair.
const shimEgressFD = 4

// exitShimSetup is the init's status when it could not start the tool.
const exitShimSetup = 126

// keptCaps is what a root tool keeps: ownership and permission overrides
// (builds and package managers run as root expect them), uid/gid changes
// (su-style test fixtures), signals and low ports. CAP_SYS_ADMIN (mount),
// CAP_MKNOD, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH (open_by_handle_at) and
// the rest go.
var keptCaps = []uintptr{
	unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_FSETID, unix.CAP_KILL,
	unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_NET_BIND_SERVICE, unix.CAP_AUDIT_WRITE,
}

// init turns a re-executed pvisor (or test binary) into the tool init
// before anything else runs: every program that links this package
// supports Isolation without a hook in its main or TestMain.
func init() {
	if len(os.Args) > 0 && os.Args[0] == shimArg0 {
		shimMain()
	}
}

// shimMain is PID 1 of one tool call's namespaces and never returns.
// Args: pvisor-tool-init <data-limit> <net:0|1|egress> <shared> <cgroup>
// <memory-limit> <rootfs> <binds> <dir> -- <path> <argv0> <args…>; shared
// is the JSON list of the overlay worker's own binds to detach
// (overlay.ToolView), cgroup the run's MemoryCgroup directory or "";
// rootfs, binds (JSON) and dir (the tool's working directory, inside) are
// "", "[]" and "" unless the tools run in a container (Isolation.Rootfs).
// It starts the tool as PID 2, reports its exit on the status pipe, then
// reaps until nothing is left, so processes the call leaves behind keep
// running (and keep this init alive) until the Runner kills the group; when
// the init dies, the kernel kills every process of the namespace, daemons
// that left the process group included.
func shimMain() {
	// Capabilities, the bounding set and no_new_privs are per thread; the
	// tool is forked from this one. Package init already runs locked to
	// the main thread and this never returns, so the lock holds without
	// runtime.LockOSThread, which would start the runtime's template
	// thread: one more clone per call.
	os.Exit(shim(os.Args[1:]))
}

func shim(args []string) int {
	status := os.NewFile(shimStatusFD, "tool-status")
	unix.CloseOnExec(shimStatusFD)
	fail := func(format string, a ...any) int {
		fmt.Fprintf(status, "error %s\n", strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", " "))
		return exitShimSetup
	}
	if len(args) < 11 || args[8] != "--" {
		return fail("bad arguments %q", args)
	}
	if _, err := strconv.ParseUint(args[0], 10, 64); err != nil {
		return fail("bad data limit %q", args[0])
	}
	var memory *MemoryCgroup
	var events *os.File
	if args[3] != "" {
		memory = &MemoryCgroup{Dir: args[3], Version: 1}
		if _, err := os.Stat(filepath.Join(args[3], "memory.events")); err == nil {
			memory.Version = 2
		}
		memory.Limit, _ = strconv.ParseUint(args[4], 10, 64)
		// Before anything else, so everything the call starts is counted.
		if memory.Version == 1 {
			if err := joinCgroup(memory.Dir); err != nil {
				return fail("%v", err)
			}
		}
		var err error
		if events, err = memory.openEvents(); err != nil {
			return fail("memory cgroup: %v", err)
		}
	}
	var shared []string
	if err := json.Unmarshal([]byte(args[2]), &shared); err != nil {
		return fail("bad shared dirs %q", args[2])
	}
	var binds []string
	if err := json.Unmarshal([]byte(args[6]), &binds); err != nil {
		return fail("bad container binds %q", args[6])
	}
	rootfs, dir, path := args[5], args[7], args[9]
	egressOn := args[1] == "egress"
	if err := shimSetup(args[1] == "1" || egressOn, shared, memory != nil, rootfs, binds); err != nil {
		return fail("%v", err)
	}
	if rootfs != "" && !strings.Contains(path, "/") {
		// Resolved here, with the tool's PATH, among the container's files.
		p, err := exec.LookPath(path)
		if err != nil {
			return fail("%v", err)
		}
		path = p
	}
	env := os.Environ()
	if egressOn {
		// Listening before the tool starts: nothing in the namespace can
		// take the port first, and there is no other way out.
		if err := nsrelay.Relay(os.NewFile(shimEgressFD, "egress")); err != nil {
			return fail("%v", err)
		}
		env = withProxyEnv(env)
	}
	env, err := shimLandlock(env)
	if err != nil {
		return fail("%v", err)
	}
	// Handled, not ignored: ignored signals would stay ignored in the tool.
	// The Runner signals the whole group, so the tool gets them directly.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT)
	go func() {
		for range sigs {
		}
	}()
	limit, _ := strconv.ParseUint(args[0], 10, 64)
	cmd := &exec.Cmd{Path: path, Args: args[10:], Dir: dir, Env: env, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if limit > 0 {
		// The tool stops right after its execve, before running any of its
		// own code, so the limit binds its image but never this init's Go
		// runtime.
		cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	}
	if err := cmd.Start(); err != nil {
		return fail("%v", err)
	}
	if limit > 0 {
		if err := limitStopped(cmd.Process.Pid, limit); err != nil {
			_ = cmd.Process.Kill()
			return fail("%v", err)
		}
	}
	fmt.Fprintf(status, "started\n")
	var oomBefore uint64
	var stderr *os.File
	if memory != nil {
		oomBefore = oomKills(events)
		if fd, err := unix.Dup(2); err == nil {
			stderr = os.NewFile(uintptr(fd), "tool-stderr")
		}
	}
	// Our copies of the output pipes would hold them open for as long as a
	// background process keeps us alive, even one that closed its own.
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			_ = unix.Dup2(int(null.Fd()), fd)
		}
		null.Close()
	}
	ws := overlay.ReapUntil(cmd.Process.Pid)
	code, sig := ws.ExitStatus(), 0
	if ws.Signaled() {
		sig = int(ws.Signal())
	}
	if stderr != nil {
		if sig == int(unix.SIGKILL) && oomKills(events) > oomBefore {
			// Nothing else tells the tool's reader why it died.
			fmt.Fprintf(stderr, "pvisor: the tool was killed: the run's memory limit (%d bytes, %s) was reached\n", memory.Limit, memory.Mechanism())
		}
		stderr.Close()
	}
	// alone: nothing else runs, so the Runner may wait for our exit instead
	// of reporting background processes.
	alone := 1
	if p, err := unix.Wait4(-1, nil, unix.WNOHANG, nil); err == nil && p == 0 {
		alone = 0
	}
	fmt.Fprintf(status, "exit %d %d %d\n", code, sig, alone)
	status.Close()
	overlay.ReapAll()
	return 0
}

// shimSetup makes the namespaces private, detaches the overlay worker's
// own binds (and the cgroup file systems when the tool has a memory
// cgroup), mounts /proc, and drops privileges, in that order: mounting
// needs CAP_SYS_ADMIN.
func shimSetup(noNet bool, shared []string, hideCgroups bool, rootfs string, binds []string) error {
	if os.Getpid() != 1 {
		return fmt.Errorf("not PID 1 of a new PID namespace (pid %d)", os.Getpid())
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if rootfs != "" {
		// The host's tree, the worker's binds and cgroups included, is
		// gone once the container's root is entered.
		if err := enterRootfs(rootfs, binds); err != nil {
			return err
		}
		shared, hideCgroups = nil, false
	}
	// In an overlay worker's view of the whole tree, the state and output
	// dirs are the worker's own binds; without them the tool's writes
	// there land in the upper layer.
	if err := overlay.DetachShared(shared); err != nil {
		return err
	}
	// Root may write cgroup files whatever its capabilities: without them
	// in sight a tool cannot leave the run's memory cgroup.
	if hideCgroups {
		if err := unix.Unmount("/sys/fs/cgroup", unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			return fmt.Errorf("detach /sys/fs/cgroup: %w", err)
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if noNet {
		if err := LoopbackUp(); err != nil {
			return err
		}
	}
	return dropPrivileges()
}

// withProxyEnv points every usual proxy variable at the relay, replacing
// the tool's own: a proxy named elsewhere would be unreachable anyway.
// NO_PROXY stays: hosts it names are tried directly and find nothing
// outside the namespace's own loopback.
func withProxyEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy":
			continue
		}
		out = append(out, kv)
	}
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		out = append(out, name+"="+nsrelay.ProxyURL)
	}
	return out
}

// limitStopped sets the data limit of a tool stopped at its first
// instruction (PTRACE_TRACEME) and lets it run.
func limitStopped(pid int, limit uint64) error {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("wait for the tool to stop: %w", err)
		}
		break
	}
	if !ws.Stopped() {
		return fmt.Errorf("the tool ended before its limits were set (%v)", ws)
	}
	rl := unix.Rlimit{Cur: limit, Max: limit}
	if err := unix.Prlimit(pid, unix.RLIMIT_DATA, &rl, nil); err != nil {
		return fmt.Errorf("RLIMIT_DATA: %w", err)
	}
	return unix.PtraceDetach(pid)
}

func dropPrivileges() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	kept := map[uintptr]bool{}
	var mask uint64
	for _, c := range keptCaps {
		kept[c] = true
		mask |= 1 << c
	}
	last := uintptr(unix.CAP_LAST_CAP)
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = uintptr(n)
		}
	}
	for c := uintptr(0); c <= last; c++ {
		if kept[c] {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for i := range data {
		m := uint32(mask >> (32 * i))
		data[i].Effective &= m
		data[i].Permitted &= m
		data[i].Inheritable &= m
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// LoopbackUp brings lo up in the calling thread's network namespace, which
// starts with it down.
func LoopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	return nil
}

// CheckLoopbackOnly fails unless lo, up, is the only network interface in
// sight: what a process in a fresh namespace after LoopbackUp should see.
// It reads /proc/thread-self/net/dev (this thread's namespace) rather than use
// package net, whose package init would otherwise run in every call's init.
func CheckLoopbackOnly() error {
	data, err := os.ReadFile("/proc/thread-self/net/dev")
	if err != nil {
		return fmt.Errorf("list network interfaces: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(data), "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(name, "|") {
			names = append(names, strings.TrimSpace(name))
		}
	}
	up := false
	if len(names) == 1 && names[0] == "lo" {
		if fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
			if ifr, err := unix.NewIfreq("lo"); err == nil && unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr) == nil {
				up = ifr.Uint16()&unix.IFF_UP != 0
			}
			unix.Close(fd)
		}
	}
	if !up {
		return fmt.Errorf("the network namespace is not loopback-only: interfaces %v", names)
	}
	return nil
}

// Probe starts one trivial process with iso and reports why it failed:
// namespaces may be denied (a container without CAP_SYS_ADMIN, a seccomp
// profile) even to root.
func (iso Isolation) Probe() error {
	r, err := NewRunner(Options{Env: []string{"PATH=/usr/bin:/bin"}, Isolation: iso})
	if err != nil {
		return err
	}
	defer r.Close()
	res, err := r.Shell(context.Background(), ShellRequest{Argv: []string{"/bin/sh", "-c", "exit 0"}, Dir: "/"})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("tool isolation: a trivial command exited %d: %s", res.ExitCode, res.Stderr.String())
	}
	return nil
}

// shimCmd turns cmd (resolved Path, Args) into a start of the init. With
// Egress it also returns the init's end of the proxy's socketpair (for
// the caller to close once the init started) and the proxy's start
// callback.
func (iso Isolation) shimCmd(cmd *exec.Cmd, status *os.File) (egressEnd *os.File, started func(bool), err error) {
	net := "0"
	flags := uintptr(unix.CLONE_NEWPID | unix.CLONE_NEWNS)
	if iso.NoNetwork || iso.Egress != nil {
		net = "1"
		flags |= unix.CLONE_NEWNET
	}
	cmd.ExtraFiles = []*os.File{status}
	if iso.Egress != nil {
		if egressEnd, started, err = iso.Egress.Attach(); err != nil {
			return nil, nil, err
		}
		net = "egress"
		cmd.ExtraFiles = append(cmd.ExtraFiles, egressEnd)
	}
	// The overlay worker's view of the whole tree is inherited; only its
	// own binds go, once per call.
	shared, _, _ := overlay.ToolView()
	cg, memLimit := "", "0"
	if iso.Memory != nil {
		cg, memLimit = iso.Memory.Dir, strconv.FormatUint(iso.Memory.Limit, 10)
	}
	sharedArg, _ := json.Marshal(shared)
	if shared == nil {
		sharedArg = []byte("[]")
	}
	bindsArg, dir := []byte("[]"), ""
	if iso.Rootfs != "" {
		bindsArg, _ = json.Marshal(iso.Binds)
		// The directory is the container's: the init changes into it after
		// entering the root, so the host need not have it.
		dir, cmd.Dir = cmd.Dir, ""
	}
	args := append([]string{shimArg0, strconv.FormatUint(iso.DataLimit, 10), net, string(sharedArg), cg, memLimit,
		iso.Rootfs, string(bindsArg), dir, "--", cmd.Path}, cmd.Args...)
	cmd.Path, cmd.Args = "/proc/self/exe", args
	if iso.WriteRoots != nil {
		cmd.Env = setWriteRoots(cmd.Env, iso.WriteRoots)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Cloneflags |= flags
	if iso.Memory != nil && iso.Memory.fd != nil {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(iso.Memory.fd.Fd())
	}
	// The init dies with pvisor, even on SIGKILL, and takes the namespace
	// with it.
	cmd.SysProcAttr.Pdeathsig = unix.SIGKILL
	return egressEnd, started, nil
}

// shimStatus is the init's report of the tool's exit.
type shimStatus struct {
	ok        bool
	code, sig int
	alone     bool
}

// shimStarted reads the init's first line: nil once the tool runs.
func shimStarted(r *bufio.Reader) error {
	line, err := r.ReadString('\n')
	line = strings.TrimSuffix(line, "\n")
	switch {
	case line == "started":
		return nil
	case strings.HasPrefix(line, "error "):
		return fmt.Errorf("tool isolation: %s", strings.TrimPrefix(line, "error "))
	case err != nil:
		return fmt.Errorf("tool isolation: the init ended before starting the tool: %w", err)
	}
	return fmt.Errorf("tool isolation: unexpected report %q", line)
}

func readShimStatus(r *bufio.Reader) shimStatus {
	line, _ := r.ReadString('\n')
	var s shimStatus
	var alone int
	if n, _ := fmt.Sscanf(strings.TrimSuffix(line, "\n"), "exit %d %d %d", &s.code, &s.sig, &alone); n == 3 {
		s.ok, s.alone = true, alone == 1
	}
	return s
}
