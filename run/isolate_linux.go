package run

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/pvisor/pvisor/overlay"
	"github.com/pvisor/pvisor/run/toolinit"
)

// Isolation keeps a replayed tool away from pvisor: a trajectory is
// untrusted input, and its commands run as whoever runs pvisor.
type Isolation struct {
	// Enabled runs every process through a small init (this binary
	// re-executed, see package toolinit) that is PID 1 of new PID and
	// mount namespaces with a fresh /proc, so no process outside the call
	// is visible (pvisor's own environment, the overlay worker's, other
	// calls'); it sets no_new_privs and keeps only the capabilities in
	// toolinit.KeptCaps, so tools cannot unmount or remount the overlay,
	// create device nodes or trace.
	Enabled bool
	// DataLimit caps each tool process's data segment in bytes
	// (RLIMIT_DATA: heap and private writable mappings); 0 means no limit.
	DataLimit uint64
	// NoNetwork gives the tools a network namespace of their own with only
	// loopback, up.
	NoNetwork bool
	// Egress, with NoNetwork, is the tools' only way out of their network
	// namespace: each init listens on toolinit.RelayAddr inside it and
	// hands every connection to this proxy, and the tools'
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

// exitShimSetup is the init's status when it could not start the tool.
const exitShimSetup = toolinit.ExitSetup

// LoopbackUp brings lo up in the calling thread's network namespace, which
// starts with it down.
func LoopbackUp() error { return toolinit.LoopbackUp() }

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
	net := toolinit.NetShared
	flags := uintptr(unix.CLONE_NEWPID | unix.CLONE_NEWNS)
	if iso.NoNetwork || iso.Egress != nil {
		net = toolinit.NetNone
		flags |= unix.CLONE_NEWNET
	}
	cmd.ExtraFiles = []*os.File{status}
	if iso.Egress != nil {
		if egressEnd, started, err = iso.Egress.Attach(); err != nil {
			return nil, nil, err
		}
		net = toolinit.NetEgress
		cmd.ExtraFiles = append(cmd.ExtraFiles, egressEnd)
	}
	// The overlay worker's view of the whole tree is inherited; only its
	// own binds go, once per call.
	shared, _, _ := overlay.ToolView()
	cg, memLimit := "", uint64(0)
	if iso.Memory != nil {
		cg, memLimit = iso.Memory.Dir, iso.Memory.Limit
	}
	var ct toolinit.Container
	if iso.Rootfs != "" {
		// The directory is the container's: the init changes into it after
		// entering the root, so the host need not have it.
		ct = toolinit.Container{Root: filepath.Clean(iso.Rootfs), Binds: iso.Binds, Dir: cmd.Dir}
		cmd.Dir = ""
	}
	cmd.Args, cmd.Env = toolinit.Args(iso.DataLimit, net, cg, memLimit, shared, iso.WriteRoots, ct, cmd.Path, cmd.Args, cmd.Env)
	cmd.Path = "/proc/self/exe"
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
