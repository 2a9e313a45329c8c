package run

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// procSpec is everything needed to start one process in its own group.
type procSpec struct {
	op          string
	argv        []string
	dir         string
	env         []string
	logPath     string
	maxOutput   int
	stdinPipe   bool // a pipe the caller can write to
	mergeStderr bool // stderr shares the stdout pipe
	tty         bool // a pseudo-terminal as stdin/stdout/stderr
	rows        uint16
	cols        uint16
	iso         Isolation
}

// proc is one started process group with its output capture.
type proc struct {
	cmd    *exec.Cmd
	pgid   int
	cap    *capture
	pipes  []*os.File    // read ends, for drain deadlines
	stdin  *os.File      // pipe write end or pty master; nil when stdin is /dev/null
	waited chan struct{} // closed when the direct child has been reaped
	outEOF chan struct{} // closed when every pump signalled
	start  time.Time
	// statusFile is the isolated init's status pipe (nil without Isolation).
	statusFile *os.File
	end        time.Time
	code       int            // exit code, 128+sig when killed; -1 before exit
	sig        syscall.Signal // terminating signal, if any
}

// startProc starts spec with Setpgid (or Setsid for a tty), stdin from
// /dev/null unless asked otherwise, and pumps stdout/stderr into a capture.
func startProc(spec procSpec) (*proc, error) {
	if len(spec.argv) == 0 || spec.argv[0] == "" {
		return nil, newErr(spec.op, "", InvalidArgument, errors.New("empty command"))
	}
	if !filepath.IsAbs(spec.dir) {
		return nil, newErr(spec.op, spec.dir, NotAbsolute, nil)
	}
	inContainer := spec.iso.Enabled && spec.iso.Rootfs != ""
	dirHere := spec.dir
	if inContainer {
		dirHere = HostPath(spec.dir)
	}
	if fi, err := os.Stat(dirHere); err != nil {
		return nil, fsErr(spec.op, spec.dir, err)
	} else if !fi.IsDir() {
		return nil, newErr(spec.op, spec.dir, NotDir, nil)
	}
	path := spec.argv[0]
	if !inContainer {
		// In a container the init looks the command up among its files.
		var err error
		if path, err = lookPath(spec.argv[0], spec.env); err != nil {
			return nil, fsErr(spec.op, spec.argv[0], err)
		}
	}
	p := &proc{
		cap:    newCapture(spec.maxOutput, spec.logPath),
		waited: make(chan struct{}),
		outEOF: make(chan struct{}),
		code:   -1,
	}
	cmd := &exec.Cmd{Path: path, Args: spec.argv, Dir: spec.dir, Env: spec.env}
	if cmd.Env == nil {
		cmd.Env = []string{} // nil would mean "inherit pvisor's own environment"
	}
	var childEnds []*os.File // closed in the parent once the child has them
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			if f != nil {
				f.Close()
			}
		}
	}
	fail := func(err error) (*proc, error) {
		closeAll(childEnds)
		closeAll(p.pipes)
		if p.stdin != nil {
			p.stdin.Close()
		}
		return nil, fsErr(spec.op, spec.dir, err)
	}
	streams := []int{}
	if spec.tty {
		master, slave, err := openPTY(spec.rows, spec.cols)
		if err != nil {
			return fail(err)
		}
		childEnds = append(childEnds, slave)
		p.pipes = append(p.pipes, master)
		streams = append(streams, streamStdout)
		// The master is both the output reader and the input writer; a dup
		// keeps their lifetimes (pump closes its end at EOF) independent.
		in, err := dupFile(master, "pty-in")
		if err != nil {
			return fail(err)
		}
		p.stdin = in
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	} else {
		for _, s := range []int{streamStdout, streamStderr} {
			if s == streamStderr && spec.mergeStderr {
				cmd.Stderr = cmd.Stdout
				break
			}
			r, w, err := os.Pipe()
			if err != nil {
				return fail(err)
			}
			p.pipes = append(p.pipes, r)
			childEnds = append(childEnds, w)
			streams = append(streams, s)
			if s == streamStdout {
				cmd.Stdout = w
			} else {
				cmd.Stderr = w
			}
		}
		if spec.stdinPipe {
			r, w, err := os.Pipe()
			if err != nil {
				return fail(err)
			}
			childEnds = append(childEnds, r)
			p.stdin = w
			cmd.Stdin = r
		} else {
			null, err := os.Open(os.DevNull)
			if err != nil {
				return fail(err)
			}
			childEnds = append(childEnds, null)
			cmd.Stdin = null
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	var status *bufio.Reader
	var egressStarted func(bool)
	if spec.iso.Enabled {
		sr, sw, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		childEnds = append(childEnds, sw)
		defer func() {
			if status == nil {
				sr.Close()
			}
		}()
		end, started, err := spec.iso.shimCmd(cmd, sw)
		if err != nil {
			return fail(err)
		}
		if end != nil {
			childEnds = append(childEnds, end)
			egressStarted = started
		}
		status = bufio.NewReader(sr)
		p.statusFile = sr
	}
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		status = nil
		if egressStarted != nil {
			egressStarted(false)
		}
		return fail(err)
	}
	if egressStarted != nil {
		egressStarted(true)
	}
	closeAll(childEnds)
	childEnds = nil
	p.cmd = cmd
	p.pgid = cmd.Process.Pid
	if status != nil {
		if err := shimStarted(status); err != nil {
			_ = unix.Kill(-p.pgid, unix.SIGKILL)
			_ = cmd.Wait()
			status = nil
			return fail(err)
		}
	}
	p.cap.startLog()
	dones := make([]chan struct{}, len(p.pipes))
	for i, r := range p.pipes {
		dones[i] = make(chan struct{})
		go p.cap.pump(r, streams[i], dones[i])
	}
	go func() {
		for _, d := range dones {
			<-d
		}
		close(p.outEOF)
	}()
	if status != nil {
		p.waitShim(status)
		return p, nil
	}
	go func() {
		_ = cmd.Wait() // the exit status is read from ProcessState
		p.end = time.Now()
		p.code, p.sig = exitOf(cmd.ProcessState)
		close(p.waited)
	}()
	return p, nil
}

// supervise waits for the child to exit and its output to be collected,
// killing the whole group on timeout or cancellation. Without waitEOF, output
// still open after the child exits (held by background processes) is read
// for at most grace and then detached. It reports why it killed, if it did.
func (p *proc) supervise(ctx context.Context, timeout, grace, killGrace time.Duration, waitEOF bool) (timedOut, canceled bool) {
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	waited, outEOF := p.waited, p.outEOF
	exited, eof := false, false
	stopWaitingForEOF := func() {
		waitEOF = false
		if exited {
			p.setDeadline(time.Now().Add(grace))
		}
	}
	for !(exited && eof) {
		select {
		case <-waited:
			waited, exited = nil, true
			if !waitEOF {
				p.setDeadline(time.Now().Add(grace))
			}
		case <-outEOF:
			outEOF, eof = nil, true
		case <-timer:
			timer, timedOut = nil, true
			killGroup(p.pgid, killGrace)
			stopWaitingForEOF()
		case <-ctx.Done():
			if !timedOut && !canceled {
				canceled = true
				killGroup(p.pgid, killGrace)
				stopWaitingForEOF()
			}
		}
	}
	return timedOut, canceled
}

func (p *proc) setDeadline(t time.Time) {
	for _, r := range p.pipes {
		_ = r.SetReadDeadline(t) // fails only when the pump already closed it
	}
}

// exitStatus returns the exit code (128+signal when killed, as a shell
// reports it) and the terminating signal, if any.
func (p *proc) exitStatus() (code int, sig syscall.Signal) {
	return p.code, p.sig
}

func exitOf(ps *os.ProcessState) (int, syscall.Signal) {
	if ps == nil {
		return -1, 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal()
	}
	return ps.ExitCode(), 0
}

// waitShim ends p.waited when the isolated tool exits, which is before the
// init does when the call left processes behind. When the init reports
// nothing (killed first), its own exit stands for the tool's.
func (p *proc) waitShim(status *bufio.Reader) {
	initDone := make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(initDone)
	}()
	go func() {
		st := readShimStatus(status)
		p.statusFile.Close()
		if st.ok && st.alone {
			// Nothing is left that could start a process, and waiting
			// for the init's own exit path costs time (a lot under -race).
			_ = p.cmd.Process.Kill()
		}
		if !st.ok || st.alone {
			<-initDone // GroupAlive must not see the init
		}
		p.end = time.Now()
		switch {
		case !st.ok:
			p.code, p.sig = exitOf(p.cmd.ProcessState)
		case st.sig != 0:
			p.code, p.sig = 128+st.sig, syscall.Signal(st.sig)
		default:
			p.code = st.code
		}
		close(p.waited)
	}()
}

// killGroup sends SIGKILL to the process group, or SIGTERM first when a
// grace period is set. Errors (the group is already gone) are irrelevant.
func killGroup(pgid int, grace time.Duration) {
	if pgid <= 1 {
		return
	}
	if grace <= 0 {
		_ = unix.Kill(-pgid, unix.SIGKILL)
		return
	}
	_ = unix.Kill(-pgid, unix.SIGTERM)
	time.AfterFunc(grace, func() { _ = unix.Kill(-pgid, unix.SIGKILL) })
}

// GroupAlive reports whether any non-zombie process is left in the group.
// Zombies count as gone: once their parent exited they wait for init to reap
// them, which inside containers may never happen.
func GroupAlive(pgid int) bool {
	if pgid <= 1 || unix.Kill(-pgid, 0) != nil {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell; assume the worst so Close still kills it
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := procStat(pid); ok && st.pgrp == pgid && st.state != 'Z' {
			return true
		}
	}
	return false
}

type procStatus struct {
	state byte
	ppid  int
	pgrp  int
}

// procStat parses /proc/<pid>/stat; the command name may contain spaces and
// parentheses, so fields are read after the last ')'.
func procStat(pid int) (procStatus, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStatus{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStatus{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return procStatus{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return procStatus{}, false
	}
	return procStatus{state: f[0][0], ppid: ppid, pgrp: pgrp}, true
}

// lookPath resolves name like execvp would in the child: with the child's
// PATH, not pvisor's.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return "", err
		}
		return name, nil
	}
	pathEnv := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		cand := filepath.Join(dir, name)
		if fi, err := os.Stat(cand); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", &os.PathError{Op: "exec", Path: name, Err: os.ErrNotExist}
}

func dupFile(f *os.File, name string) (*os.File, error) {
	// f.Fd() would switch the descriptor to blocking mode and disable read
	// deadlines, so the dup goes through the raw connection instead.
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	return os.NewFile(uintptr(fd), name), nil
}
