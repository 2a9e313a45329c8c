package toolinit

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The package spells out what it cannot import.
func TestConstantsMatchTheKernelHeaders(t *testing.T) {
	want := []uint{unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_FSETID, unix.CAP_KILL,
		unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_NET_BIND_SERVICE, unix.CAP_AUDIT_WRITE}
	if !slices.Equal(KeptCaps, want) {
		t.Errorf("KeptCaps = %v, want %v", KeptCaps, want)
	}
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"O_PATH", oPath, unix.O_PATH},
		{"SYS_LANDLOCK_CREATE_RULESET", sysLandlockCreateRuleset, unix.SYS_LANDLOCK_CREATE_RULESET},
		{"SYS_LANDLOCK_ADD_RULE", sysLandlockAddRule, unix.SYS_LANDLOCK_ADD_RULE},
		{"SYS_LANDLOCK_RESTRICT_SELF", sysLandlockRestrictSelf, unix.SYS_LANDLOCK_RESTRICT_SELF},
		{"LANDLOCK_CREATE_RULESET_VERSION", landlockRulesetVersion, unix.LANDLOCK_CREATE_RULESET_VERSION},
		{"LANDLOCK_RULE_PATH_BENEATH", landlockRulePathBeneath, unix.LANDLOCK_RULE_PATH_BENEATH},
		{"PR_SET_NO_NEW_PRIVS", prSetNoNewPrivs, unix.PR_SET_NO_NEW_PRIVS},
		{"PR_CAPBSET_DROP", prCapbsetDrop, unix.PR_CAPBSET_DROP},
		{"PR_CAP_AMBIENT", prCapAmbient, unix.PR_CAP_AMBIENT},
		{"PR_CAP_AMBIENT_CLEAR_ALL", prCapAmbientClr, unix.PR_CAP_AMBIENT_CLEAR_ALL},
		{"CAP_LAST_CAP", capLastCap, unix.CAP_LAST_CAP},
		{"LINUX_CAPABILITY_VERSION_3", capVersion3, unix.LINUX_CAPABILITY_VERSION_3},
		{"write rights, ABI 3", LandlockWrite(3), unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
			unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
			unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
			unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER |
			unix.LANDLOCK_ACCESS_FS_TRUNCATE},
		{"file rights", landlockFileRights, unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

func TestArgsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		shared, roots []string
		landlock      bool
		ct            Container
	}{
		{nil, nil, false, Container{}},
		{[]string{"/state", "/out dir"}, []string{}, true, Container{}},
		{nil, []string{"/ws", "/dev/null", "--"}, true, Container{}},
		{nil, nil, false, Container{Root: "/state/merged", Binds: []string{"/ws", "--", "2"}, Dir: "/root dir"}},
		{[]string{"/state"}, []string{"/ws"}, true, Container{Root: "/", Dir: ""}},
	} {
		a, env := Args(64<<20, NetEgress, "/sys/fs/cgroup/x", 1<<30, tc.shared, tc.roots, tc.ct, "/bin/sh", []string{"sh", "-c", "--"}, []string{"A=1"})
		if !slices.Equal(env, []string{"A=1", "GOMAXPROCS=1"}) {
			t.Errorf("the init's environment: %q", env)
		}
		if a[0] != Arg0 {
			t.Fatalf("argv[0] = %q", a[0])
		}
		c, bad := parseArgs(a[1:])
		if bad != "" {
			t.Fatalf("%q: %s", a, bad)
		}
		if c.dataLimit != 64<<20 || !c.maxprocs || c.net != NetEgress || c.cgroup != "/sys/fs/cgroup/x" || c.memLimit != 1<<30 ||
			!slices.Equal(c.shared, tc.shared) || c.landlock != tc.landlock || !slices.Equal(c.writeRoots, tc.roots) ||
			c.container.Root != tc.ct.Root || !slices.Equal(c.container.Binds, tc.ct.Binds) || c.container.Dir != tc.ct.Dir ||
			c.path != "/bin/sh" || !slices.Equal(c.argv, []string{"sh", "-c", "--"}) {
			t.Errorf("%q parsed as %+v", a, c)
		}
	}
	if _, env := Args(0, NetShared, "", 0, nil, nil, Container{}, "/bin/true", []string{"true"}, []string{"GOMAXPROCS=3"}); !slices.Equal(env, []string{"GOMAXPROCS=3"}) {
		t.Errorf("the tool's own GOMAXPROCS: the init's environment is %q", env)
	}
	for _, bad := range [][]string{nil, {"x", "0", "", "0", "0", "0", "-", "", "0", "", "--", "/bin/true", "true"},
		{"0", "0", "", "0", "0", "3", "/a", "-", "", "0", "", "--", "/bin/true", "true"},
		{"0", "0", "", "0", "0", "0", "-", "", "0", "", "/bin/true", "true"},
		{"0", "0", "", "0", "2", "0", "-", "", "0", "", "--", "/bin/true", "true"},
		// No container fields (the encoding before containers).
		{"0", "0", "", "0", "0", "0", "-", "--", "/bin/true", "true"},
		// A relative, an unclean container root; binds or a directory without one.
		{"0", "0", "", "0", "0", "0", "-", "root", "0", "", "--", "/bin/true", "true"},
		{"0", "0", "", "0", "0", "0", "-", "/state/../root", "0", "", "--", "/bin/true", "true"},
		{"0", "0", "", "0", "0", "0", "-", "", "1", "/ws", "", "--", "/bin/true", "true"},
		{"0", "0", "", "0", "0", "0", "-", "", "0", "/root", "--", "/bin/true", "true"},
		{"0", "0", "", "0", "0", "0", "-", "/r", "2", "/ws", "--", "/bin/true", "true"}} {
		if _, msg := parseArgs(bad); msg == "" {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestOOMKillCount(t *testing.T) {
	for text, want := range map[string]uint64{
		"low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\noom_group_kill 0\n": 2,
		"oom_kill_disable 0\nunder_oom 0\noom_kill 7":                 7,
		"oom 1\n": 0,
	} {
		if got := OOMKillCount(text); got != want {
			t.Errorf("OOMKillCount(%q) = %d, want %d", text, got, want)
		}
	}
}

// TestResolveIn: an untrusted root's links, absolute or with "..", resolve
// below it; a loop is an error (package run tests the same through its
// ResolveIn, which the file tools use).
func TestResolveIn(t *testing.T) {
	root := t.TempDir()
	for _, l := range [][2]string{{"/etc", "abs"}, {"../../../../etc", "etc/up"}, {"loop2", "loop1"}, {"loop1", "loop2"}, {"bin", "usr/sbin"}} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, l[1])), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(l[0], filepath.Join(root, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	for in, want := range map[string]string{
		"/abs/passwd":        root + "/etc/passwd",
		"/etc/up/shadow":     root + "/etc/shadow",
		"/../../etc/hosts":   root + "/etc/hosts",
		"/missing/../../x":   root + "/x",
		"/missing/../../../": root,
		"usr//sbin/./sh":     root + "/usr/bin/sh",
		"/usr/sbin/../lib":   root + "/usr/lib",
	} {
		if got, err := ResolveIn(root, in); err != nil || got != want {
			t.Errorf("ResolveIn(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	if got, err := ResolveIn("/", "/a/../b/"); err != nil || got != "/b" {
		t.Errorf("ResolveIn(/, /a/../b/) = %s, %v", got, err)
	}
	if _, err := ResolveIn(root, "/loop1/x"); err != syscall.ELOOP {
		t.Errorf("a symlink loop: %v, want ELOOP", err)
	}
}

func TestMkdirAll(t *testing.T) {
	root := t.TempDir()
	if err := mkdirAll(root+"/a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(root + "/a/b/c"); err != nil || !fi.IsDir() {
		t.Fatalf("%v %v", fi, err)
	}
	if err := mkdirAll(root+"/a/b", 0o755); err != nil {
		t.Errorf("an existing directory: %v", err)
	}
	if err := os.WriteFile(root+"/f", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := mkdirAll(root+"/f/g", 0o755); err != syscall.ENOTDIR {
		t.Errorf("below a file: %v, want ENOTDIR", err)
	}
}

// TestLookPath: the first executable of the PATH's absolute directories,
// as exec.LookPath finds it; directories, files without x and relative
// entries do not count.
func TestLookPath(t *testing.T) {
	d := t.TempDir()
	for _, f := range []struct {
		name string
		mode os.FileMode
	}{{"a/tool", 0o644}, {"b/tool/x", 0o755}, {"c/tool", 0o755}, {"d/tool", 0o755}} {
		p := filepath.Join(d, f.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	path := "PATH=:rel:" + d + "/a:" + d + "/b:" + d + "/c/:" + d + "/d"
	got, msg := lookPath("tool", []string{"A=1", path, "PATH=" + d + "/d"})
	if msg != "" || got != d+"/c/tool" {
		t.Errorf("lookPath = %q, %q; want %s/c/tool", got, msg, d)
	}
	want, err := exec.LookPath(filepath.Join(d, "c", "tool"))
	if err != nil || want != got {
		t.Errorf("exec.LookPath finds %q, %v", want, err)
	}
	if _, msg := lookPath("tool", []string{"PATH=" + d + "/a:rel"}); msg == "" {
		t.Error("a file without x found")
	}
	if _, msg := lookPath("tool", nil); msg == "" {
		t.Error("found without a PATH")
	}
}
