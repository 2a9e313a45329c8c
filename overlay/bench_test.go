//go:build linux

package overlay

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkMountUnmount times Mount+Unmount of an overlay on a thread with
// a private mount namespace (the same syscalls init makes), against
// mounting and unmounting an empty tmpfs in the same run.
func BenchmarkMountUnmount(b *testing.B) {
	requireOverlay(b)
	base := b.TempDir()
	ws, tmp := filepath.Join(base, "ws"), filepath.Join(base, "tmpfs")
	writeTree(b, base, map[string]string{"ws/a": "a", "tmpfs/": ""})
	cfg, l := Config{Path: ws}, NewLayout(filepath.Join(base, "state"))
	if err := prepareLayout(cfg, l); err != nil {
		b.Fatal(err)
	}
	inPrivateNS(b, func() error {
		// Baseline and measured mounts alternate, so load from other
		// processes hits both alike.
		var baseline time.Duration
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			start := time.Now()
			if err := unix.Mount("tmpfs", tmp, "tmpfs", 0, "size=1m"); err != nil {
				return err
			}
			if err := unix.Unmount(tmp, 0); err != nil {
				return err
			}
			baseline += time.Since(start)
			b.StartTimer()
			if err := Mount(cfg, l); err != nil {
				return err
			}
			// A write gives unmount's sync of the upper layer real work.
			if err := os.WriteFile(filepath.Join(ws, "w"), []byte("w"), 0o644); err != nil {
				return err
			}
			if err := Unmount(ws); err != nil {
				return err
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed())/float64(baseline), "x_tmpfs")
		return nil
	})
}

// BenchmarkRunRoundTrip times a whole Run of a worker that exits at once
// (preflight, two re-execs, mount, unmount, teardown) against re-executing
// the binary once without namespaces, and once into new mount and PID
// namespaces without mounting anything, in the same run.
func BenchmarkRunRoundTrip(b *testing.B) {
	requireOverlay(b)
	f := &fixture{base: b.TempDir()}
	f.ws, f.scratch = filepath.Join(f.base, "ws"), filepath.Join(f.base, "scratch")
	writeTree(b, f.base, map[string]string{"ws/a": "a", "scratch/": ""})
	f.cfg, f.layout = Config{Path: f.ws}, NewLayout(filepath.Join(f.base, "state"))

	reexec := func(flags uintptr) time.Duration {
		start := time.Now()
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(childEnv(), envPlain+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags}
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	// The three kinds alternate, so load from other processes hits all alike.
	var plain, namespaced time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		plain += reexec(0)
		namespaced += reexec(unix.CLONE_NEWNS | unix.CLONE_NEWPID)
		b.StartTimer()
		if e, err := f.run(context.Background(), nil, "noop"); err != nil || e != (Exit{}) {
			b.Fatalf("Run = %+v, %v\n%s", e, err, f.stderr.String())
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed())/float64(plain), "x_plain_reexec")
	b.ReportMetric(float64(b.Elapsed())/float64(namespaced), "x_ns_reexec")
}

// BenchmarkRootView is what the view of the whole tree costs: per tool
// call, a process in new mount and PID namespaces that mounts /proc and
// execs true, started by a worker in the view (so it also detaches the
// shared binds) against one without it (today's overlay), in alternating
// rounds; per run, Run of a worker that exits at once with the view built
// (and dropped) against without it. Medians.
func BenchmarkRootView(b *testing.B) {
	requireOverlay(b)
	f := &fixture{base: b.TempDir()}
	f.ws, f.scratch = filepath.Join(f.base, "ws"), filepath.Join(f.base, "scratch")
	writeTree(b, f.base, map[string]string{"ws/a": "a", "scratch/": ""})
	f.cfg = Config{Path: f.ws}
	var noView, view []time.Duration
	for i := range b.N {
		f.layout = NewLayout(filepath.Join(f.base, "state", strconv.Itoa(i)))
		// Alternating which goes first, so load from other processes hits
		// both alike.
		for j := range 2 {
			off := (i+j)%2 == 0
			var env []string
			if off {
				env = []string{envNoRoot + "=1"}
			}
			start := time.Now()
			if e, err := f.run(context.Background(), env, "noop"); err != nil || e != (Exit{}) {
				b.Fatalf("Run = %+v, %v\n%s", e, err, f.stderr.String())
			}
			if off {
				noView = append(noView, time.Since(start))
			} else {
				view = append(view, time.Since(start))
			}
			if _, err := Commit(Config{Path: f.ws, Commit: CommitDrop}, f.layout); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Calls: rounds of a worker without the view and one in it, each
	// starting tools the way the run package's init does.
	var callsPlain, callsView []time.Duration
	for round := range 6 {
		for _, off := range []bool{round%2 == 0, round%2 != 0} {
			f.layout = NewLayout(filepath.Join(f.base, "state", fmt.Sprintf("calls-%d-%v", round, off)))
			var env []string
			if off {
				env = []string{envNoRoot + "=1"}
			}
			if e, err := f.run(context.Background(), env, "toolbench", "10", "calls.json"); err != nil || e != (Exit{}) {
				b.Fatalf("Run = %+v, %v\n%s", e, err, f.stderr.String())
			}
			var times []time.Duration
			readJSON(b, filepath.Join(f.scratch, "calls.json"), &times)
			if off {
				callsPlain = append(callsPlain, times...)
			} else {
				callsView = append(callsView, times...)
			}
		}
	}
	plainP50, viewP50 := median(callsPlain), median(callsView)
	b.ReportMetric(float64(viewP50)/1e6, "call-view-p50-ms")
	b.ReportMetric(float64(plainP50)/1e6, "call-plain-p50-ms")
	b.ReportMetric(float64(viewP50)/float64(plainP50), "call_view/plain")
	b.ReportMetric(float64(median(view))/1e6, "run-view-p50-ms")
	b.ReportMetric(float64(median(noView))/1e6, "run-noview-p50-ms")
	b.ReportMetric(float64(median(view))/float64(median(noView)), "run_view/noview")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
