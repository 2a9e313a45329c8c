package toolinit

import (
	"slices"
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
	}{
		{nil, nil, false},
		{[]string{"/state", "/out dir"}, []string{}, true},
		{nil, []string{"/ws", "/dev/null", "--"}, true},
	} {
		a, env := Args(64<<20, NetEgress, "/sys/fs/cgroup/x", 1<<30, tc.shared, tc.roots, "/bin/sh", []string{"sh", "-c", "--"}, []string{"A=1"})
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
			c.path != "/bin/sh" || !slices.Equal(c.argv, []string{"sh", "-c", "--"}) {
			t.Errorf("%q parsed as %+v", a, c)
		}
	}
	if _, env := Args(0, NetShared, "", 0, nil, nil, "/bin/true", []string{"true"}, []string{"GOMAXPROCS=3"}); !slices.Equal(env, []string{"GOMAXPROCS=3"}) {
		t.Errorf("the tool's own GOMAXPROCS: the init's environment is %q", env)
	}
	for _, bad := range [][]string{nil, {"x", "0", "", "0", "0", "0", "-", "--", "/bin/true", "true"},
		{"0", "0", "", "0", "0", "3", "/a", "-", "--", "/bin/true", "true"}, {"0", "0", "", "0", "0", "0", "-", "/bin/true", "true"},
		{"0", "0", "", "0", "2", "0", "-", "--", "/bin/true", "true"}} {
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
