//go:build linux

package overlay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestTeardown ends runs in every way a run can end and checks that no
// process is left in the run's namespace, that the host never sees a mount,
// and that the upper layer keeps what was written.
func TestTeardown(t *testing.T) {
	requireOverlay(t)
	signalSelf := func(sig syscall.Signal) func(*testing.T, string, context.CancelFunc) {
		return func(t *testing.T, _ string, _ context.CancelFunc) { syscall.Kill(os.Getpid(), sig) }
	}
	cases := []struct {
		name    string
		mode    string // what the worker does after it is ready
		env     []string
		trigger func(t *testing.T, ns string, cancel context.CancelFunc)
		want    Exit
		wantErr bool
	}{
		{name: "context cancelled", mode: "wait",
			trigger: func(_ *testing.T, _ string, cancel context.CancelFunc) { cancel() },
			want:    Exit{Code: 143, Signal: syscall.SIGTERM}},
		{name: "SIGTERM to pvisor is forwarded", mode: "wait", trigger: signalSelf(syscall.SIGTERM),
			want: Exit{Code: 143, Signal: syscall.SIGTERM}},
		{name: "SIGINT to pvisor is forwarded", mode: "wait", trigger: signalSelf(syscall.SIGINT),
			want: Exit{Code: 130, Signal: syscall.SIGINT}},
		{name: "SIGTERM sent to init directly", mode: "wait", trigger: signalInit(syscall.SIGTERM),
			want: Exit{Code: 143, Signal: syscall.SIGTERM}},
		{name: "init killed with SIGKILL", mode: "wait", trigger: signalInit(syscall.SIGKILL),
			want: Exit{Code: 137, Signal: syscall.SIGKILL}, wantErr: true},
		{name: "worker panics", mode: "panic", want: Exit{Code: 2}},
		{name: "worker exits leaving a daemon", mode: "exit3", want: Exit{Code: 3}},
		{name: "init panics", mode: "wait", env: []string{envPanicInit + "=1"},
			want: Exit{Code: 2}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, map[string]string{"a.txt": "a\n"})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan runResult, 1)
			go func() {
				e, err := f.run(ctx, tc.env, "linger", tc.mode)
				done <- runResult{e, err}
			}()
			if !waitFile(filepath.Join(f.scratch, "ready"), 20*time.Second) {
				t.Fatal("worker never became ready")
			}
			nsRaw, err := os.ReadFile(filepath.Join(f.scratch, "ns"))
			if err != nil {
				t.Fatal(err)
			}
			ns := string(nsRaw)
			if tc.trigger != nil {
				tc.trigger(t, ns, cancel)
			}
			var r runResult
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return")
			}
			if r.exit != tc.want || (r.err != nil) != tc.wantErr {
				t.Errorf("Run = %+v, %v; want %+v, error %v", r.exit, r.err, tc.want, tc.wantErr)
			}
			// When the namespace's init is gone the kernel kills the rest;
			// they may take a moment to leave /proc on a busy machine.
			left := processesInNamespace(ns)
			for deadline := time.Now().Add(5 * time.Second); len(left) > 0 && time.Now().Before(deadline); left = processesInNamespace(ns) {
				time.Sleep(20 * time.Millisecond)
			}
			if len(left) > 0 {
				t.Errorf("processes still in the run's mount namespace %s: %v", ns, left)
			}
			if m := hostMountsAt(t, f.ws); len(m) != 0 {
				t.Errorf("host sees mounts at the workspace: %+v", m)
			}
			if got, err := os.ReadFile(filepath.Join(f.layout.Upper, "lingered.txt")); err != nil || string(got) != "kept for inspection\n" {
				t.Errorf("upper layer lost the run's write: %q, %v", got, err)
			}
			if _, err := os.Stat(filepath.Join(f.ws, "lingered.txt")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the run's write reached the workspace: %v", err)
			}
		})
	}
}

// signalInit signals the run's init: our child in the run's namespace.
func signalInit(sig syscall.Signal) func(*testing.T, string, context.CancelFunc) {
	return func(t *testing.T, ns string, _ context.CancelFunc) {
		for _, pid := range processesInNamespace(ns) {
			status, err := os.ReadFile("/proc/" + pid + "/status")
			if err != nil || !strings.Contains(string(status), fmt.Sprintf("\nPPid:\t%d\n", os.Getpid())) {
				continue
			}
			var n int
			fmt.Sscan(pid, &n)
			if err := syscall.Kill(n, sig); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatal("init not found")
	}
}

// runnerHelper plays pvisor: it runs a lingering worker until killed.
func runnerHelper(raw string) int {
	var f struct{ WS, State, Scratch string }
	if err := json.Unmarshal([]byte(raw), &f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env := append(withoutVar(childEnv(), envRunner), envScratch+"="+f.Scratch)
	_, err := Run(context.Background(), Config{Path: f.WS}, NewLayout(f.State), Options{Args: []string{"x", "linger", "wait"}, Env: env, Stderr: os.Stderr, Shared: []string{f.Scratch}})
	fmt.Fprintln(os.Stderr, "Run returned:", err)
	return 1
}

func TestKilledParentTakesTheNamespaceAlong(t *testing.T) {
	requireOverlay(t)
	f := newFixture(t, map[string]string{"a.txt": "a\n"})
	raw, _ := json.Marshal(map[string]string{"WS": f.ws, "State": filepath.Dir(f.layout.Dir), "Scratch": f.scratch})
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(childEnv(), envRunner+"="+string(raw))
	cmd.Stderr = &f.stderr
	must(t, cmd.Start())
	if !waitFile(filepath.Join(f.scratch, "ready"), 20*time.Second) {
		cmd.Process.Kill()
		t.Fatal("worker never became ready")
	}
	nsRaw, err := os.ReadFile(filepath.Join(f.scratch, "ns"))
	must(t, err)
	must(t, cmd.Process.Kill())
	cmd.Process.Wait() // not cmd.Wait: the run's processes may still hold stderr
	// Pdeathsig reaches init asynchronously after the parent is gone.
	deadline := time.Now().Add(10 * time.Second)
	for len(processesInNamespace(string(nsRaw))) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes survive in the run's namespace: %v", processesInNamespace(string(nsRaw)))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(f.layout.Upper, "lingered.txt")); err != nil {
		t.Errorf("upper layer lost the run's write: %v", err)
	}
	if m := hostMountsAt(t, f.ws); len(m) != 0 {
		t.Errorf("host sees mounts at the workspace: %+v", m)
	}
}

// outerSpec drives outerHelper, a process in its own mount namespace in
// which the workspace sits on a shared mount, as on a systemd host.
type outerSpec struct {
	Base, State, Scratch string
	NoPrivate            bool
}

type outerResult struct {
	Leaked bool
	Detail string
}

// outerHelper reports whether the run's overlay showed up in this (the
// parent's) namespace while the worker was alive.
func outerHelper(raw string) int {
	var s outerSpec
	res := func(r outerResult) int {
		data, _ := json.Marshal(r)
		fmt.Println(string(data))
		return 0
	}
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return fail(err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail(err)
	}
	if err := unix.Mount("tmpfs", s.Base, "tmpfs", 0, "size=16m"); err != nil {
		return fail(err)
	}
	if err := unix.Mount("", s.Base, "", unix.MS_SHARED, ""); err != nil {
		return fail(err)
	}
	ws := filepath.Join(s.Base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		return fail(err)
	}
	env := append(withoutVar(childEnv(), envOuter), envScratch+"="+s.Scratch)
	if s.NoPrivate {
		env = append(env, envNoPrivate+"=1")
	}
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), Config{Path: ws}, NewLayout(s.State), Options{Args: []string{"x", "isolate"}, Env: env, Dir: ws, Shared: []string{s.Scratch}})
		done <- err
	}()
	if !waitFile(filepath.Join(s.Scratch, "ready"), 20*time.Second) {
		return fail(errors.New("worker never became ready"))
	}
	mounts, err := readMountinfo()
	if err != nil {
		return fail(err)
	}
	at := mountsAt(mounts, ws)
	_, statErr := os.Stat(filepath.Join(ws, "new.txt"))
	touch(filepath.Join(s.Scratch, "release"))
	if err := <-done; err != nil {
		return fail(err)
	}
	return res(outerResult{Leaked: len(at) > 0 || statErr == nil, Detail: fmt.Sprintf("mounts at ws: %+v; new.txt: %v", at, statErr)})
}

func TestMountDoesNotPropagate(t *testing.T) {
	requireOverlay(t)
	for _, tc := range []struct {
		name      string
		noPrivate bool
		wantLeak  bool
	}{
		{"private", false, false},
		{"control run without MS_PRIVATE leaks", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			s := outerSpec{Base: filepath.Join(base, "shared"), State: filepath.Join(base, "state"), Scratch: filepath.Join(base, "scratch"), NoPrivate: tc.noPrivate}
			for _, d := range []string{s.Base, s.Scratch} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			raw, _ := json.Marshal(s)
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(childEnv(), envOuter+"="+string(raw))
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWNS}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("helper: %v\n%s", err, stderr.String())
			}
			var r outerResult
			if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
				t.Fatalf("helper output %q: %v", out, err)
			}
			if r.Leaked != tc.wantLeak {
				t.Errorf("leaked = %v, want %v (%s)", r.Leaked, tc.wantLeak, r.Detail)
			}
		})
	}
}
