package overlay

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// envSpec carries the child's instructions from Run to ChildMain. The worker
// removes it from its environment, so tools and agents it starts (and a
// pvisor they might run) never see it.
const envSpec = "PVISOR_OVERLAY_CHILD"

// statusFD is Run's pipe in the init process (ExtraFiles[0]).
const statusFD = 3

// exitSetup is init's exit code when it failed before the worker ran; Run
// reports the reason from the status pipe, not this number.
const exitSetup = 125

const (
	stageInit   = "init"
	stageWorker = "worker"
)

type spec struct {
	Stage  string `json:"stage"`
	Config Config `json:"config"`
	Layout Layout `json:"layout"`
	// ParentMntNS is the parent's mount namespace ("mnt:[inode]"); init
	// refuses to mount when its own is the same.
	ParentMntNS string `json:"parent_mnt_ns"`
	// Shared are Options.Shared, real paths.
	Shared []string `json:"shared,omitempty"`
	// View is set for the worker when it runs in the view of the whole
	// tree; RootMissing says why not otherwise.
	View        bool   `json:"view,omitempty"`
	RootMissing string `json:"root_missing,omitempty"`
}

// event is one line on the status pipe from init to Run.
type event struct {
	Event   string `json:"event"` // "error", "ready" or "exited"
	Stage   string `json:"stage,omitempty"`
	Message string `json:"message,omitempty"`
	Code    int    `json:"code,omitempty"`
	Signal  int    `json:"signal,omitempty"`
}

// childSpec is set in the init and worker processes.
var childSpec *spec

// initHook lets tests interfere with init at a given point ("mount",
// "mounted", "root", "started"); nil in production.
var initHook func(point string)

// makePrivate is false only in a test's control run, which shows that the
// propagation test does notice a mount leaking to the parent.
var makePrivate = true

// IsChild reports whether this process was started by Run and must hand
// control to ChildMain before doing anything else.
func IsChild() bool {
	_, ok := os.LookupEnv(envSpec)
	return ok
}

// InNamespace reports whether this process is the worker of an overlay run,
// i.e. it sees the merged view at Config.Path.
func InNamespace() bool { return childSpec != nil }

// Current returns the overlay the worker runs under.
func Current() (Config, Layout, bool) {
	if childSpec == nil {
		return Config{}, Layout{}, false
	}
	return childSpec.Config, childSpec.Layout, true
}

// ChildMain runs the namespace side of Run and never returns. Call it first
// thing in main when IsChild reports true:
//
//	if overlay.IsChild() {
//		overlay.ChildMain(func() int { return realMain(os.Args) })
//	}
//
// In the first re-exec (init, PID 1 of new mount and PID namespaces) it
// mounts the overlay and starts the second re-exec (worker), which calls
// work with the merged view in place and exits with its result.
func ChildMain(work func() int) {
	var s spec
	if err := json.Unmarshal([]byte(os.Getenv(envSpec)), &s); err != nil {
		fmt.Fprintf(os.Stderr, "pvisor: %s is set but unreadable (%v); unset it to run normally\n", envSpec, err)
		os.Exit(exitSetup)
	}
	childSpec = &s
	switch s.Stage {
	case stageInit:
		os.Exit(runInit(&s))
	case stageWorker:
		os.Unsetenv(envSpec)
		os.Exit(work())
	}
	fmt.Fprintf(os.Stderr, "pvisor: %s has unknown stage %q\n", envSpec, s.Stage)
	os.Exit(exitSetup)
}

// runInit is PID 1 of the run's namespaces. Being PID 1 is the point: when
// it exits for any reason (worker done, panic, SIGKILL, parent death via
// Pdeathsig), the kernel kills every process left in the namespace, and the
// mount namespace, with the overlay, goes away with the last of them. Run's
// Wait therefore returns only when nothing can write to the upper layer.
func runInit(s *spec) int {
	unix.CloseOnExec(statusFD)
	status := &statusPipe{f: os.NewFile(statusFD, "overlay-status")}
	fail := func(stage string, err error) int {
		status.send(event{Event: "error", Stage: stage, Message: err.Error()})
		return exitSetup
	}
	if err := enterNamespace(s); err != nil {
		return fail("namespace", err)
	}
	cwd, cwdErr := unix.Getwd()
	hook("mount")
	if err := mountOverlay(s.Config, s.Layout, s.Config.Path); err != nil {
		return fail("mount", err)
	}
	hook("mounted")
	// The cwd inherited from Run still points into the lower directory.
	if cwdErr == nil && within(cwd, s.Config.Path) {
		if err := unix.Chdir(cwd); err != nil {
			return fail("chdir", fmt.Errorf("re-enter %s after mounting: %w", cwd, err))
		}
	}

	w := *s
	w.Stage = stageWorker
	switch {
	case s.Layout.Root == "":
	case rootViewOff:
		w.RootMissing = "the view of the whole tree was switched off"
	default:
		hook("root")
		if err := buildRootView(s.Config, s.Layout, s.Shared); err != nil {
			w.RootMissing = "no overlay of the file tree outside the workspace (" + err.Error() + ")"
			break
		}
		// Past this point the old root is gone: a failure ends the run.
		dir := "/"
		if cwdErr == nil {
			dir = cwd
		}
		if err := enterView(s.Layout.Root, dir); err != nil {
			return fail("mount", err)
		}
		w.View = true
	}

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	proc, err := startWorker(&w)
	if err != nil {
		return fail("start", err)
	}
	status.send(event{Event: "ready"})
	fwd := newForwarder(proc.Pid)
	go func() {
		for sig := range sigs {
			fwd.send(sig.(syscall.Signal))
		}
	}()
	hook("started")

	ws := ReapUntil(proc.Pid)
	fwd.stop()
	proc.Release()
	// Background processes the worker left behind would keep the merged
	// view alive and could still write to the upper layer.
	EndNamespace(leftoverGrace)
	unix.Chdir("/") // our own cwd would keep the mount busy
	if err := Unmount(s.Config.Path); err != nil {
		// Not fatal: the mount dies with the namespace a moment later.
		fmt.Fprintf(os.Stderr, "pvisor: %v (it goes away with the namespace)\n", err)
	}
	ev := event{Event: "exited", Code: ws.ExitStatus()}
	if ws.Signaled() {
		ev.Signal = int(ws.Signal())
		ev.Code = 128 + ev.Signal
	}
	status.send(ev)
	return ev.Code
}

// enterNamespace checks that the clone flags took effect and cuts mount
// propagation before anything is mounted: with a shared "/" (the systemd
// default) the overlay would otherwise propagate back to the host.
func enterNamespace(s *spec) error {
	ns, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return err
	}
	if ns == s.ParentMntNS {
		return fmt.Errorf("still in the parent's mount namespace (%s); refusing to mount", ns)
	}
	if os.Getpid() != 1 {
		return fmt.Errorf("not PID 1 of a new PID namespace (pid %d)", os.Getpid())
	}
	if makePrivate {
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("make / private: %w", err)
		}
	}
	// A /proc of the new PID namespace, so PIDs that tools read from /proc
	// match the ones they get from fork.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc for the new PID namespace: %w (a container may need --privileged)", err)
	}
	return nil
}

func startWorker(s *spec) (*os.Process, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	env := withoutVar(os.Environ(), envSpec)
	env = append(env, envSpec+"="+string(raw))
	return os.StartProcess("/proc/self/exe", os.Args, &os.ProcAttr{
		Env:   env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
}

// ReapUntil reaps every child (orphans are re-parented to PID 1) until the
// given one has exited, and returns its status (SIGKILL when it vanished
// without one). For PID 1 of a namespace: the overlay init, the tool init.
func ReapUntil(worker int) unix.WaitStatus {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			// ECHILD: the worker is gone without a status; report a kill.
			return unix.WaitStatus(unix.SIGKILL)
		}
		if pid == worker {
			return ws
		}
	}
}

// leftoverGrace is how long what a command left running gets between
// SIGTERM and SIGKILL when its namespace ends.
const leftoverGrace = time.Second

// EndNamespace ends every process left in the caller's PID namespace, of
// which the caller must be PID 1: SIGTERM first, then SIGKILL once grace
// has passed or at once when all are gone. The SIGTERM matters on real
// machines: a shell script killed outright skips its EXIT trap, and the
// lock files such traps remove stay behind. pyenv's rehash lock, taken by
// every login shell that runs "pyenv init", is one: left behind, it stalls
// every later login shell on the machine for 60 s.
func EndNamespace(grace time.Duration) {
	if unix.Kill(-1, unix.SIGTERM) == nil { // ESRCH: nothing is left
		deadline := time.Now().Add(grace)
		for time.Now().Before(deadline) {
			pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
			if err == unix.ECHILD {
				return // orphans are our children, so none means nothing left
			}
			if err == nil && pid == 0 {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	unix.Kill(-1, unix.SIGKILL)
	ReapAll()
}

// ReapAll reaps children until there are none left.
func ReapAll() {
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
	}
}

func hook(point string) {
	if initHook != nil {
		initHook(point)
	}
}

// forwarder signals the worker until it has been reaped, so a signal never
// reaches a process that reused its PID.
type forwarder struct {
	mu   sync.Mutex
	pid  int
	done bool
}

func newForwarder(pid int) *forwarder { return &forwarder{pid: pid} }

func (f *forwarder) send(sig syscall.Signal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.done {
		unix.Kill(f.pid, sig)
	}
}

func (f *forwarder) stop() {
	f.mu.Lock()
	f.done = true
	f.mu.Unlock()
}

type statusPipe struct {
	mu sync.Mutex
	f  *os.File
}

func (p *statusPipe) send(ev event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	line, _ := json.Marshal(ev)
	p.f.Write(append(line, '\n'))
}

func withoutVar(env []string, name string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
