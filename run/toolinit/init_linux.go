package toolinit

import (
	"strconv"
	"syscall"
	"unsafe"
)

// Arg0 marks the re-executed init; argv[0] rather than an environment
// variable, because the tool inherits the environment.
const Arg0 = "pvisor-tool-init"

// StatusFD is the pipe on which the init reports the tool's start and exit.
const StatusFD = 3

// EgressFD is the init's end of the egress proxy's socketpair.
const EgressFD = 4

// ExitSetup is the init's status when it could not start the tool.
const ExitSetup = 126

// Net modes (the second argument).
const (
	NetShared = "0"      // the Runner's network namespace
	NetNone   = "1"      // a namespace of its own, loopback only
	NetEgress = "egress" // NetNone plus the relay to the egress proxy
)

// Args builds the init's argv (Arg0 first) and environment for one call
// of path with argv and env; initMain parses the same. dataLimit is
// RLIMIT_DATA in bytes (0: none), cgroup the run's memory cgroup directory
// ("": none) with its limit, shared the overlay worker's binds to detach,
// writeRoots the Landlock write roots (nil: no Landlock; empty: no writes
// at all), ct the container root (zero: none; path then may be a bare
// name, looked up inside). Lists are a count and their items, each an
// argument of its own: no separator a path could contain.
func Args(dataLimit uint64, net, cgroup string, memLimit uint64, shared, writeRoots []string, ct Container, path string, argv, env []string) ([]string, []string) {
	// GOMAXPROCS set spares the init's runtime reading the CPU cgroup's
	// limits and /proc/self/mountinfo (long in an overlay's view of the
	// whole tree); the init takes it out again unless the tool's own.
	maxprocs := "0"
	if !hasVar(env, "GOMAXPROCS") {
		maxprocs = "1"
		env = append(env[:len(env):len(env)], maxprocsVar)
	}
	a := make([]string, 0, 13+len(shared)+len(writeRoots)+len(ct.Binds)+len(argv))
	a = append(a, Arg0, strconv.FormatUint(dataLimit, 10), net, cgroup, strconv.FormatUint(memLimit, 10), maxprocs, strconv.Itoa(len(shared)))
	a = append(a, shared...)
	if writeRoots == nil {
		a = append(a, "-")
	} else {
		a = append(a, strconv.Itoa(len(writeRoots)))
		a = append(a, writeRoots...)
	}
	a = append(a, ct.Root, strconv.Itoa(len(ct.Binds)))
	a = append(a, ct.Binds...)
	a = append(a, ct.Dir, "--", path)
	return append(a, argv...), env
}

// maxprocsVar is the init's GOMAXPROCS when the tool has none.
const maxprocsVar = "GOMAXPROCS=1"

func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if len(kv) > len(name) && kv[len(name)] == '=' && kv[:len(name)] == name {
			return true
		}
	}
	return false
}

// withoutVar is env without the entries that set name.
func withoutVar(env []string, name string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !(len(kv) > len(name) && kv[len(name)] == '=' && kv[:len(name)] == name) {
			out = append(out, kv)
		}
	}
	return out
}

// os.Args without package os, whose init (and imports) would run first;
// the runtime provides it for os.
//
//go:linkname runtimeArgs os.runtime_args
func runtimeArgs() []string

// signal.Notify without package os/signal: with the signal enabled, the
// runtime's handler queues it instead of ending the process.
//
//go:linkname signalEnable os/signal.signal_enable
func signalEnable(uint32)

// init turns a re-executed pvisor (or test binary) into the tool init
// before anything else runs: every program that links package run (which
// imports this one) supports Isolation without a hook in its main or
// TestMain.
func init() {
	if a := runtimeArgs(); len(a) > 0 && a[0] == Arg0 {
		// Capabilities, the bounding set, no_new_privs and Landlock are
		// per thread; the tool is forked from this one. Package init
		// runs locked to the main thread and this never returns.
		syscall.Exit(initMain(a[1:]))
	}
}

// config is the init's parsed arguments.
type config struct {
	dataLimit  uint64
	net        string
	cgroup     string
	memLimit   uint64
	maxprocs   bool // GOMAXPROCS is the init's own, not the tool's
	shared     []string
	landlock   bool
	writeRoots []string
	container  Container
	path       string
	argv       []string
}

func parseArgs(args []string) (config, string) {
	var c config
	if len(args) < 6 {
		return c, "bad arguments " + strconv.Quote(join(args))
	}
	var err error
	if c.dataLimit, err = strconv.ParseUint(args[0], 10, 64); err != nil {
		return c, "bad data limit " + strconv.Quote(args[0])
	}
	c.net, c.cgroup = args[1], args[2]
	if c.memLimit, err = strconv.ParseUint(args[3], 10, 64); err != nil {
		return c, "bad memory limit " + strconv.Quote(args[3])
	}
	if args[4] != "0" && args[4] != "1" {
		return c, "bad GOMAXPROCS flag " + strconv.Quote(args[4])
	}
	c.maxprocs = args[4] == "1"
	rest := args[5:]
	list := func() ([]string, bool) {
		if len(rest) == 0 {
			return nil, false
		}
		n, err := strconv.Atoi(rest[0])
		if err != nil || n < 0 || n > len(rest)-1 {
			return nil, false
		}
		l := rest[1 : 1+n : 1+n]
		rest = rest[1+n:]
		return l, true
	}
	var ok bool
	if c.shared, ok = list(); !ok {
		return c, "bad shared dirs " + strconv.Quote(join(args))
	}
	if len(rest) > 0 && rest[0] == "-" {
		rest = rest[1:]
	} else if c.writeRoots, ok = list(); ok {
		c.landlock = true
		if c.writeRoots == nil {
			c.writeRoots = []string{}
		}
	} else {
		return c, "bad write roots " + strconv.Quote(join(args))
	}
	if len(rest) == 0 {
		return c, "bad arguments " + strconv.Quote(join(args))
	}
	c.container.Root, rest = rest[0], rest[1:]
	if c.container.Binds, ok = list(); !ok || len(rest) == 0 {
		return c, "bad container binds " + strconv.Quote(join(args))
	}
	c.container.Dir, rest = rest[0], rest[1:]
	if ct := c.container; ct.Root == "" {
		if len(ct.Binds) > 0 || ct.Dir != "" {
			return c, "container binds or directory without a container root " + strconv.Quote(join(args))
		}
	} else if cleanAbs(ct.Root) != ct.Root {
		// ResolveIn's root: a clean absolute path.
		return c, "bad container root " + strconv.Quote(ct.Root)
	}
	if len(rest) < 3 || rest[0] != "--" {
		return c, "bad arguments " + strconv.Quote(join(args))
	}
	c.path, c.argv = rest[1], rest[2:]
	return c, ""
}

// initMain is PID 1 of one tool call's namespaces. It starts the tool as
// PID 2, reports its exit on the status pipe, then reaps until nothing is
// left, so processes the call leaves behind keep running (and keep this
// init alive) until the Runner kills the group; when the init dies, the
// kernel kills every process of the namespace, daemons that left the
// process group included.
func initMain(args []string) int {
	_, _, _ = syscall.RawSyscall(syscall.SYS_FCNTL, StatusFD, syscall.F_SETFD, syscall.FD_CLOEXEC)
	fail := func(msg string) int {
		report("error " + replaceNewlines(msg) + "\n")
		return ExitSetup
	}
	c, bad := parseArgs(args)
	if bad != "" {
		return fail(bad)
	}
	var memory *memoryCgroup
	if c.cgroup != "" {
		var msg string
		// Before anything else, so everything the call starts is counted.
		if memory, msg = openMemory(c.cgroup, c.memLimit); msg != "" {
			return fail(msg)
		}
	}
	if msg := setup(c.net != NetShared, c.shared, memory != nil, c.container); msg != "" {
		return fail(msg)
	}
	env := syscall.Environ()
	if c.container.Root != "" && indexByte(c.path, '/') < 0 {
		// Resolved here, with the tool's PATH, among the container's files.
		var msg string
		if c.path, msg = lookPath(c.path, env); msg != "" {
			return fail(msg)
		}
	}
	if c.maxprocs {
		env = withoutVar(env, "GOMAXPROCS")
	}
	if c.net == NetEgress {
		// Listening before the tool starts: nothing in the namespace can
		// take the port first, and there is no other way out.
		if msg := relay(EgressFD); msg != "" {
			return fail(msg)
		}
		env = withProxyEnv(env)
	}
	if c.landlock {
		if msg := restrictWrites(c.writeRoots); msg != "" {
			return fail(msg)
		}
	}
	// Handled, not ignored: ignored signals would stay ignored in the tool.
	// The Runner signals the whole group, so the tool gets them directly.
	for _, s := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT} {
		signalEnable(uint32(s))
	}
	pid, msg := startTool(c.path, c.argv, env, c.container.Dir, c.dataLimit)
	if msg != "" {
		return fail(msg)
	}
	report("started\n")
	var oomBefore uint64
	stderr := -1
	if memory != nil {
		oomBefore = memory.oomKills()
		if fd, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, 2, syscall.F_DUPFD_CLOEXEC, 0); errno == 0 {
			stderr = int(fd)
		}
	}
	// Our copies of the output pipes would hold them open for as long as a
	// background process keeps us alive, even one that closed its own.
	if null, err := syscall.Open("/dev/null", syscall.O_RDWR|syscall.O_CLOEXEC, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			_ = syscall.Dup3(null, fd, 0)
		}
		syscall.Close(null)
	}
	ws := reapUntil(pid)
	code, sig := ws.ExitStatus(), 0
	if ws.Signaled() {
		sig = int(ws.Signal())
	}
	if stderr >= 0 {
		if sig == int(syscall.SIGKILL) && memory.oomKills() > oomBefore {
			// Nothing else tells the tool's reader why it died.
			writeAll(stderr, "pvisor: the tool was killed: the run's memory limit ("+strconv.FormatUint(memory.limit, 10)+" bytes, "+memory.mechanism()+") was reached\n")
		}
		syscall.Close(stderr)
	}
	// alone: nothing else runs, so the Runner may wait for our exit instead
	// of reporting background processes.
	alone := "1"
	if p, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil); err == nil && p == 0 {
		alone = "0"
	}
	report("exit " + strconv.Itoa(code) + " " + strconv.Itoa(sig) + " " + alone + "\n")
	syscall.Close(StatusFD)
	reapAll()
	return 0
}

// startTool forks and executes the tool with stdin, stdout and stderr, the
// init's session and process group, and dir as its working directory (""
// for the init's own). With a data
// limit the tool stops right after its execve (PTRACE_TRACEME), before
// running any of its own code, so the limit binds its image but never
// this init's Go runtime.
func startTool(path string, argv, env []string, dir string, dataLimit uint64) (int, string) {
	attr := &syscall.ProcAttr{Dir: dir, Env: env, Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Ptrace: dataLimit > 0}}
	pid, err := syscall.ForkExec(path, argv, attr)
	if err != nil {
		return 0, "fork/exec " + path + ": " + err.Error()
	}
	if dataLimit > 0 {
		if msg := limitStopped(pid, dataLimit); msg != "" {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return 0, msg
		}
	}
	return pid, ""
}

// limitStopped sets the data limit of a tool stopped at its first
// instruction and lets it run.
func limitStopped(pid int, limit uint64) string {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return "wait for the tool to stop: " + err.Error()
		}
		break
	}
	if !ws.Stopped() {
		return "the tool ended before its limits were set (wait status " + strconv.Itoa(int(ws)) + ")"
	}
	rl := syscall.Rlimit{Cur: limit, Max: limit}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_DATA, uintptr(unsafe.Pointer(&rl)), 0, 0, 0); errno != 0 {
		return "RLIMIT_DATA: " + errno.Error()
	}
	if err := syscall.PtraceDetach(pid); err != nil {
		return "detach from the tool: " + err.Error()
	}
	return ""
}

// reapUntil reaps every child until pid has exited and returns its status
// (a kill when it is gone without one).
func reapUntil(pid int) syscall.WaitStatus {
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return syscall.WaitStatus(syscall.SIGKILL)
		}
		if p == pid {
			return ws
		}
	}
}

// reapAll reaps until no child is left.
func reapAll() {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return
		}
	}
}

// withProxyEnv points every usual proxy variable at the relay, replacing
// the tool's own: a proxy named elsewhere would be unreachable anyway.
// NO_PROXY stays: hosts it names are tried directly and find nothing
// outside the namespace's own loopback.
func withProxyEnv(env []string) []string {
	names := []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}
	out := env
	for _, n := range names {
		out = withoutVar(out, n)
	}
	for _, n := range names {
		out = append(out, n+"="+ProxyURL)
	}
	return out
}

func report(line string) { writeAll(StatusFD, line) }

func writeAll(fd int, s string) {
	b := []byte(s)
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return
		}
		b = b[n:]
	}
}

func join(a []string) string {
	s := ""
	for i, x := range a {
		if i > 0 {
			s += " "
		}
		s += x
	}
	return s
}

func replaceNewlines(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}
