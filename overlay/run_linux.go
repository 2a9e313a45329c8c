package overlay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// forwardedSignals reach the worker through Run and init; a terminal's
// Ctrl-C only reaches Run, because the child has its own process group.
var forwardedSignals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT}

const defaultGrace = 5 * time.Second

// Run executes the current binary again inside new mount and PID namespaces
// with the merged view of cfg mounted over cfg.Path, and waits for it. The
// re-executed main must call ChildMain (see IsChild); ChildMain runs the
// worker function there.
//
// Run checks cfg with Preflight and creates the layers in l. SIGINT, SIGTERM
// and SIGHUP sent to this process while Run waits are forwarded to the
// worker. When ctx is done the worker gets SIGTERM and, Options.Grace later,
// the whole namespace is killed. When Run returns, no process of the run is
// left and the overlay is gone; the upper layer in l stays for Changes and
// Commit.
//
// The error is a *PreflightError or *SetupError when the worker never ran,
// or says that the namespace died before the worker's status was known
// (then Exit still tells how init ended). A worker that ran and failed is
// not an error: see Exit.
func Run(ctx context.Context, cfg Config, l Layout, o Options) (Exit, error) {
	if err := ctx.Err(); err != nil {
		return Exit{}, err
	}
	cfg, err := Preflight(cfg, l)
	if err != nil {
		return Exit{}, err
	}
	if err := prepareLayout(cfg, l); err != nil {
		return Exit{}, err
	}
	parentNS, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return Exit{}, fmt.Errorf("overlayfs: read mount namespace: %w", err)
	}
	shared := make([]string, 0, len(o.Shared))
	for _, d := range o.Shared {
		real, err := realPath(d)
		if err != nil {
			return Exit{}, fmt.Errorf("overlayfs: shared dir: %w", err)
		}
		shared = append(shared, real)
	}
	// Parents first: a state dir inside the output dir is bound over it.
	slices.Sort(shared)
	raw, err := json.Marshal(spec{Stage: stageInit, Config: cfg, Layout: l, ParentMntNS: parentNS, Shared: shared})
	if err != nil {
		return Exit{}, err
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(withoutVar(env, envSpec), envSpec+"="+string(raw))

	statusR, statusW, err := os.Pipe()
	if err != nil {
		return Exit{}, err
	}
	defer statusR.Close()
	args := o.Args
	if len(args) == 0 {
		args = []string{os.Args[0]}
	}
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       args,
		Env:        env,
		Dir:        o.Dir,
		Stdin:      o.Stdin,
		Stdout:     o.Stdout,
		Stderr:     o.Stderr,
		ExtraFiles: []*os.File{statusW},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags: unix.CLONE_NEWNS | unix.CLONE_NEWPID,
			Setpgid:    true,
			// If pvisor itself dies, init dies, and the kernel takes the
			// whole namespace with it.
			Pdeathsig: unix.SIGKILL,
		},
	}

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)

	// Pdeathsig fires when the *thread* that forked the child exits; keep
	// this goroutine on its thread until the child is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		statusW.Close()
		return Exit{}, fmt.Errorf("overlayfs: start namespace child: %w", err)
	}
	statusW.Close()

	events := make(chan []event, 1)
	go func() { events <- readEvents(statusR) }()

	done := make(chan struct{})
	go supervise(ctx, cmd.Process, sigs, o.Grace, done)
	waitErr := cmd.Wait()
	close(done)
	evs := <-events

	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return Exit{}, fmt.Errorf("overlayfs: wait for namespace child: %w", waitErr)
	}
	for _, ev := range evs {
		switch ev.Event {
		case "error":
			return exitOf(cmd.ProcessState), &SetupError{Stage: ev.Stage, Message: ev.Message}
		case "exited":
			return Exit{Code: ev.Code, Signal: syscall.Signal(ev.Signal)}, nil
		}
	}
	return exitOf(cmd.ProcessState), fmt.Errorf("overlayfs: the namespace ended (%s) before reporting the worker's status; the workspace is untouched and %s keeps what was written", cmd.ProcessState, l.Upper)
}

// supervise forwards signals and turns ctx cancellation into SIGTERM, then
// SIGKILL of init (which takes the namespace with it) after the grace time.
func supervise(ctx context.Context, p *os.Process, sigs <-chan os.Signal, grace time.Duration, done <-chan struct{}) {
	if grace <= 0 {
		grace = defaultGrace
	}
	var kill <-chan time.Time
	cancelled := ctx.Done()
	for {
		select {
		case <-done:
			return
		case sig := <-sigs:
			p.Signal(sig)
		case <-cancelled:
			cancelled = nil
			p.Signal(unix.SIGTERM)
			t := time.NewTimer(grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			p.Kill()
			return
		}
	}
}

func readEvents(r *os.File) []event {
	var out []event
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			out = append(out, ev)
		}
	}
	return out
}

func exitOf(ps *os.ProcessState) Exit {
	if ps == nil {
		return Exit{}
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return Exit{Code: 128 + int(ws.Signal()), Signal: ws.Signal()}
	}
	return Exit{Code: ps.ExitCode()}
}

// prepareLayout creates the layer directories. The upper directory's mode
// and owner become those of the merged workspace root, so they are copied
// from the workspace. Dir is 0700: the upper layer may hold setuid files
// the run created, which other users must not reach.
func prepareLayout(cfg Config, l Layout) error {
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return fmt.Errorf("overlayfs: create %s: %w", l.Dir, err)
	}
	if err := os.Chmod(l.Dir, 0o700); err != nil {
		return fmt.Errorf("overlayfs: %w", err)
	}
	for _, d := range []string{l.Upper, l.Work} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("overlayfs: create %s: %w", d, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(cfg.Path, &st); err != nil {
		return fmt.Errorf("overlayfs: %w", err)
	}
	if err := unix.Chown(l.Upper, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("overlayfs: %w", err)
	}
	if err := unix.Chmod(l.Upper, st.Mode&0o7777); err != nil {
		return fmt.Errorf("overlayfs: %w", err)
	}
	var us, ws unix.Stat_t
	if err := unix.Stat(l.Upper, &us); err != nil {
		return fmt.Errorf("overlayfs: %w", err)
	}
	if err := unix.Stat(l.Work, &ws); err != nil {
		return fmt.Errorf("overlayfs: %w", err)
	}
	if us.Dev != ws.Dev {
		return &PreflightError{Check: "state-dir", Msg: fmt.Sprintf("%s and %s are on different filesystems; overlayfs needs them on one: do not mount anything inside %s", l.Upper, l.Work, l.Dir)}
	}
	return nil
}
