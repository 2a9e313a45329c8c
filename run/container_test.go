package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/run/containertest"
)

func requireContainer(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a container root needs tool isolation (root)")
	}
	if err := (Isolation{Enabled: true}).Probe(); err != nil {
		t.Skipf("namespaces are not available here: %v", err)
	}
	return containertest.Busybox(t)
}

// containerRunner is a runner whose tools run in an overlay of the
// busybox root, with ws bound in.
func containerRunner(t testing.TB, ws string, iso Isolation) (*Runner, *ContainerRoot) {
	t.Helper()
	root := requireContainer(t)
	c, err := MountContainerRoot(root, filepath.Join(t.TempDir(), "container"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	iso.Enabled, iso.Rootfs, iso.Binds = true, c.Merged, []string{ws}
	r, err := NewRunner(Options{Env: []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin"}, Isolation: iso, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, c
}

// TestContainerShell: a call runs in the busybox root (its os-release,
// its busybox), sees the workspace at its own path, keeps its PID
// namespace, and its write to /etc reaches neither the user's root dir nor
// the host; the file tools see the same files as the shell.
func TestContainerShell(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "in-ws.txt"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, c := containerRunner(t, ws, Isolation{})
	name := "pvisor-container-" + filepath.Base(ws)
	cmd := "cat /etc/os-release; ls /bin/busybox; cat " + ws + "/in-ws.txt; ls /proc | grep -c '^[0-9]'; echo made > /etc/" + name + "; cat /etc/" + name + "; pwd"
	res, err := r.Shell(context.Background(), ShellRequest{Command: cmd, Dir: "/root"})
	if err != nil {
		t.Fatal(err)
	}
	out := res.Stdout.String()
	for _, want := range []string{containertest.OSRelease, "/bin/busybox\n", "from the host\n", "made\n/root\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q (stderr %q) lacks %q", out, res.Stderr.String(), want)
		}
	}
	if res.ExitCode != 0 {
		t.Errorf("exit %d, stderr %q", res.ExitCode, res.Stderr.String())
	}
	// init, the shell, ls and grep: the host's processes are out of sight.
	if !strings.Contains(out, "host\n4\n") {
		t.Errorf("the call's /proc is not its own PID namespace's: %q", out)
	}
	for _, p := range []string{"/etc/" + name, filepath.Join(c.Lower, "etc", name)} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists: the container's write left it", p)
		}
	}
	// The in-process file tools resolve /etc in the container too.
	f, err := ReadFile("/etc/os-release")
	if err != nil || string(f.Content) != containertest.OSRelease || f.Path != "/etc/os-release" {
		t.Errorf("ReadFile(/etc/os-release) = %q, %q, %v", f.Content, f.Path, err)
	}
	if _, err := WriteFile("/etc/"+name+"-file", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat("/etc/" + name + "-file"); err == nil {
		os.Remove("/etc/" + name + "-file")
		t.Error("WriteFile wrote the host's /etc")
	}
	res, _ = r.Shell(context.Background(), ShellRequest{Command: "cat /etc/" + name + "-file", Dir: ws})
	if res.Stdout.String() != "x" {
		t.Errorf("the shell does not see the file tool's write: %q %q", res.Stdout.String(), res.Stderr.String())
	}
	g, err := Glob("/", "/etc/os-rel*", GlobOptions{})
	if err != nil || len(g.Files) != 1 || g.Files[0].Path != "/etc/os-release" {
		t.Errorf("Glob(/etc/os-rel*) = %+v, %v", g.Files, err)
	}
	// The workspace is the workspace, not the container's copy of its path.
	if f, err := ReadFile(filepath.Join(ws, "in-ws.txt")); err != nil || string(f.Content) != "from the host\n" {
		t.Errorf("ReadFile in the workspace: %q %v", f.Content, err)
	}
}

// TestContainerLooksUpBareNamesInside: a command named without a path is
// found with the tool's PATH among the container's files (the host has no
// such tool), and runs in a directory only the container has.
func TestContainerLooksUpBareNamesInside(t *testing.T) {
	ws := t.TempDir()
	r, _ := containerRunner(t, ws, Isolation{})
	tool := "pvisor-inside-" + filepath.Base(ws)
	setup := "mkdir /only-inside && printf '#!/bin/sh\\necho $0 in $(pwd)\\n' > /usr/sbin/" + tool + " && chmod +x /usr/sbin/" + tool
	if res, err := r.Shell(context.Background(), ShellRequest{Command: setup, Dir: ws}); err != nil || res.ExitCode != 0 {
		t.Fatalf("%v %q", err, res.Stderr.String())
	}
	if _, err := os.Stat("/only-inside"); err == nil {
		t.Fatal("the host has /only-inside: the test proves nothing here")
	}
	res, err := r.Shell(context.Background(), ShellRequest{Argv: []string{tool}, Dir: "/only-inside"})
	if err != nil || res.Stdout.String() != "/usr/sbin/"+tool+" in /only-inside\n" {
		t.Errorf("%v %q %q", err, res.Stdout.String(), res.Stderr.String())
	}
	res, err = r.Shell(context.Background(), ShellRequest{Argv: []string{tool + "-missing"}, Dir: "/"})
	if err == nil || !strings.Contains(err.Error(), "not found in $PATH") {
		t.Errorf("a missing tool: %v, exit %d", err, res.ExitCode)
	}
}

// TestResolveInStaysInRoot: symlinks of an untrusted root, absolute or
// with "..", resolve below it.
func TestResolveInStaysInRoot(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.Symlink("/etc", filepath.Join(root, "abs"))
	os.Symlink("../../../../etc", filepath.Join(root, "etc", "up"))
	os.Symlink("loop2", filepath.Join(root, "loop1"))
	os.Symlink("loop1", filepath.Join(root, "loop2"))
	for in, want := range map[string]string{
		"/abs/passwd":        root + "/etc/passwd",
		"/etc/up/shadow":     root + "/etc/shadow",
		"/../../etc/hosts":   root + "/etc/hosts",
		"/missing/../../x":   root + "/x",
		"/missing/../../../": root,
	} {
		if got, err := ResolveIn(root, in); err != nil || got != want {
			t.Errorf("ResolveIn(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := ResolveIn(root, "/loop1/x"); err == nil {
		t.Error("a symlink loop resolved")
	}
}
