package run

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func requireIsolation(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("tool isolation needs root (namespaces, mounting /proc)")
	}
}

const canary = "canary-a5f1e0"

// The tool must not read pvisor's environment through /proc, whichever
// process it looks at; without isolation the same script does (the control
// case shows the probe works).
func TestIsolationHidesParentEnvironment(t *testing.T) {
	requireIsolation(t)
	// Our own initial environment cannot be changed, so a process started
	// with the canary stands in for pvisor.
	holder := exec.Command("sleep", "60")
	holder.Env = []string{"ANTHROPIC_API_KEY=" + canary}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { holder.Process.Kill(); holder.Wait() }()
	script := `cat /proc/$PPID/environ; cat /proc/1/environ; for p in /proc/[0-9]*; do cat $p/environ; done 2>/dev/null; echo; ls /proc | grep -c '^[0-9]'`
	for _, tc := range []struct {
		iso  bool
		leak bool
	}{{false, true}, {true, false}} {
		t.Run(fmt.Sprint("isolated=", tc.iso), func(t *testing.T) {
			r := newTestRunner(t, Options{Env: append(testEnv, "TOOLVAR=visible"), Isolation: Isolation{Enabled: tc.iso}})
			res, err := r.Shell(context.Background(), ShellRequest{Command: script, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			out := res.Stdout.String()
			if got := strings.Contains(out, canary); got != tc.leak {
				t.Errorf("canary visible=%v, want %v", got, tc.leak)
			}
			if !strings.Contains(out, "TOOLVAR=visible") {
				t.Errorf("the tool's own environment is not readable: %q", out)
			}
			if tc.iso {
				// init, bash, ls and grep at most
				if n, _ := strconv.Atoi(lastField(out)); n < 2 || n > 5 {
					t.Errorf("%d processes visible in /proc, want only the call's", n)
				}
			}
		})
	}
}

func lastField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// A root tool keeps file permissions but cannot mount, unmount or create
// devices, and no_new_privs is set.
func TestIsolationDropsPrivileges(t *testing.T) {
	requireIsolation(t)
	r := newTestRunner(t, Options{Isolation: Isolation{Enabled: true}})
	dir := t.TempDir()
	for _, tc := range []struct{ cmd, want string }{
		{"grep -E '^(NoNewPrivs|CapBnd)' /proc/self/status", "NoNewPrivs:\t1"},
		{"umount -l /proc && echo unmounted", ""},
		{"mount -t tmpfs none " + dir + " && echo mounted", ""},
		{"mknod " + dir + "/sda b 8 0 && echo made", ""},
		{"echo x > " + dir + "/f && chown 1:1 " + dir + "/f && echo owned", "owned"},
	} {
		res, err := r.Shell(context.Background(), ShellRequest{Command: tc.cmd, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		out := res.Stdout.String()
		if tc.want == "" && out != "" || !strings.Contains(out, tc.want) {
			t.Errorf("%s: stdout %q stderr %q, want %q", tc.cmd, out, res.Stderr.String(), tc.want)
		}
		if strings.HasPrefix(tc.cmd, "grep") {
			bnd := strings.Fields(out[strings.Index(out, "CapBnd:"):])[1]
			if v, _ := strconv.ParseUint(bnd, 16, 64); v&(1<<21) != 0 {
				t.Errorf("CAP_SYS_ADMIN still in the bounding set: %s", bnd)
			}
		}
	}
}

func TestIsolationExitStatus(t *testing.T) {
	requireIsolation(t)
	r := newTestRunner(t, Options{Isolation: Isolation{Enabled: true}})
	for _, tc := range []struct {
		cmd  string
		code int
		sig  int
	}{{"exit 3", 3, 0}, {"true", 0, 0}, {"kill -9 $$", 137, 9}} {
		res, err := r.Shell(context.Background(), ShellRequest{Command: tc.cmd, Dir: "/"})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != tc.code || int(res.Signal) != tc.sig || res.Background {
			t.Errorf("%s: code %d signal %d background %v", tc.cmd, res.ExitCode, res.Signal, res.Background)
		}
	}
	if _, err := r.Shell(context.Background(), ShellRequest{Argv: []string{"/nonexistent/tool"}, Dir: "/"}); err == nil {
		t.Error("a missing program started")
	}
}

// A daemon that left the process group still dies with the call's
// namespace: after the call with KillBackground, at Close otherwise.
func TestIsolationReapsDaemons(t *testing.T) {
	requireIsolation(t)
	for _, killBg := range []bool{true, false} {
		r := newTestRunner(t, Options{Isolation: Isolation{Enabled: true}})
		token := strconv.Itoa(400000 + os.Getpid()%10000)
		if !killBg {
			token += "1"
		}
		res, err := r.Shell(context.Background(), ShellRequest{Command: "setsid sleep " + token + " >/dev/null 2>&1 & echo started", Dir: "/", KillBackground: killBg})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Background {
			t.Errorf("KillBackground=%v: daemon not reported", killBg)
		}
		if !killBg {
			// The background shell may not have exec'd sleep yet on a busy
			// machine: give it a moment before calling it missing.
			for start := time.Now(); len(pidsWithArg(token)) == 0 && time.Since(start) < 5*time.Second; {
				time.Sleep(10 * time.Millisecond)
			}
			if len(pidsWithArg(token)) == 0 {
				t.Fatal("daemon not running after the call")
			}
			r.Close()
		}
		deadline := time.Now().Add(2 * time.Second)
		for len(pidsWithArg(token)) > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if p := pidsWithArg(token); len(p) > 0 {
			t.Errorf("KillBackground=%v: daemon %v survived", killBg, p)
		}
	}
}

func pidsWithArg(arg string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		st, ok := procStat(pid)
		if ok && st.state != 'Z' && strings.Contains(string(b), "\x00"+arg+"\x00") {
			out = append(out, pid)
		}
	}
	return out
}

func TestIsolationLimits(t *testing.T) {
	requireIsolation(t)
	r := newTestRunner(t, Options{Isolation: Isolation{Enabled: true, DataLimit: 64 << 20}})
	res, err := r.Shell(context.Background(), ShellRequest{Command: `x=$(head -c 200000000 /dev/zero | tr '\0' a); echo ${#x}`, Dir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Stdout.String(), "200000000") {
		t.Errorf("a 200 MB string fit in a 64 MiB data limit")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	probe := fmt.Sprintf("grep -c : /proc/net/dev; (exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo reached", port)
	for _, noNet := range []bool{false, true} {
		r := newTestRunner(t, Options{Isolation: Isolation{Enabled: true, NoNetwork: noNet}})
		res, err := r.Shell(context.Background(), ShellRequest{Command: probe, Dir: "/"})
		if err != nil {
			t.Fatal(err)
		}
		out := res.Stdout.String()
		if reached := strings.Contains(out, "reached"); reached == noNet {
			t.Errorf("NoNetwork=%v: pvisor's loopback reached=%v (%q)", noNet, reached, out)
		}
		if noNet && !strings.HasPrefix(out, "1\n") {
			t.Errorf("NoNetwork: interfaces %q, want only lo", out)
		}
	}
}

// TestIsolationMemoryCgroup: a tool that allocates past the run's memory
// cgroup is killed, its stderr and exit status say so, the next call runs,
// and Close removes the cgroup.
func TestIsolationMemoryCgroup(t *testing.T) {
	requireIsolation(t)
	cg, err := NewMemoryCgroup(64 << 20)
	if err != nil {
		t.Skipf("no memory cgroup here: %v", err)
	}
	r := newTestRunner(t, Options{Isolation: Isolation{Enabled: true, Memory: cg}})
	res, err := r.Shell(context.Background(), ShellRequest{Command: `x=$(head -c 200000000 /dev/zero | tr '\0' a); echo ${#x}`, Dir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 128+9 || !strings.Contains(res.Stderr.String(), "the run's memory limit (67108864 bytes, "+cg.Mechanism()+") was reached") {
		t.Errorf("exit %d, stderr %q; want 137 and the memory limit named", res.ExitCode, res.Stderr.String())
	}
	if strings.Contains(res.Stdout.String(), "200000000") {
		t.Errorf("a 200 MB string fit in a 64 MiB cgroup")
	}
	// The next call runs, and cannot leave the cgroup: the cgroup file
	// systems are not in its view.
	res, err = r.Shell(context.Background(), ShellRequest{Command: `for f in /sys/fs/cgroup/memory/cgroup.procs /sys/fs/cgroup/cgroup.procs; do echo $$ > $f; done 2>/dev/null; ls /sys/fs/cgroup | wc -l; cat /proc/self/cgroup`, Dir: "/"})
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout.String(), filepath.Base(cg.Dir)) || !strings.HasPrefix(res.Stdout.String(), "0\n") {
		t.Errorf("next call: %v, exit %d, output %q; want no cgroup fs and still in %s", err, res.ExitCode, res.Stdout.String(), cg.Dir)
	}
	r.Close()
	if err := cg.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cg.Dir); err == nil {
		t.Errorf("%s left behind", cg.Dir)
	}
}

func TestOwnCgroup(t *testing.T) {
	v1 := "9:name=systemd:/\n4:memory:/process_api/f9bc\n3:cpu,cpuacct:/x\n0::/\n"
	v2 := "0::/user.slice/session-1.scope\n"
	for _, tc := range []struct{ in, controller, want string }{
		{v1, "memory", "/process_api/f9bc"},
		{v1, "cpuacct", "/x"},
		{v1, "", "/"},
		{v2, "", "/user.slice/session-1.scope"},
		{v2, "memory", "/"},
	} {
		if got := ownCgroup(tc.in, tc.controller); got != tc.want {
			t.Errorf("ownCgroup(%q, %q) = %q, want %q", tc.in, tc.controller, got, tc.want)
		}
	}
}
