package run

import (
	"encoding/json"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// landlockEnv carries the write roots from the Runner to the tool init.
// The positional arguments of the init are the isolated call path's;
// this rides beside them and the init removes it before the tool starts.
const landlockEnv = "PVISOR_TOOL_INIT_WRITE_ROOTS"

// DeviceWriteRoots are the files every shell tool may write under
// --policy enforce besides the workspace: the character devices programs
// open for writing as a matter of course (2>/dev/null, a terminal). No
// temporary directory is among them: the tool init gives a call none of
// its own, and /tmp is shared with the host.
var DeviceWriteRoots = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// landlockWrite is every write right of the ABI: creating, removing,
// renaming into, truncating and writing files. Reading and executing stay
// unrestricted, and device ioctls are left alone (ABI 5's IOCTL_DEV would
// break terminals).
func landlockWrite(abi int) uint64 {
	r := uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	if abi >= 2 {
		r |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		r |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	return r
}

// landlockFileRights are the rights a rule on a non-directory may carry.
const landlockFileRights = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE

// LandlockABI is the kernel's Landlock ABI version, or an error that says
// why --policy enforce cannot deny shell tools' writes here.
func LandlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == unix.ENOSYS:
		return 0, fmt.Errorf("this kernel has no Landlock (landlock_create_ruleset: ENOSYS; it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)")
	case errno == unix.EOPNOTSUPP:
		return 0, fmt.Errorf("Landlock is built into this kernel but not enabled (add landlock to the lsm= boot parameter)")
	case errno != 0:
		return 0, fmt.Errorf("landlock_create_ruleset: %v", errno)
	}
	return int(v), nil
}

// setWriteRoots hands the init the roots it restricts writes to.
func setWriteRoots(env []string, roots []string) []string {
	b, _ := json.Marshal(roots)
	return append(env[:len(env):len(env)], landlockEnv+"="+string(b)) // never into the caller's array
}

// shimLandlock, in the tool init after its mounts and privilege drop
// (Landlock needs no_new_privs), restricts the init's thread, and so the
// tool forked from it, to writing under the roots it was given. It returns
// env without the carrier variable.
func shimLandlock(env []string) ([]string, error) {
	var spec string
	kept := env[:0:0]
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, landlockEnv+"="); ok {
			spec = v
			continue
		}
		kept = append(kept, kv)
	}
	if spec == "" {
		return kept, nil
	}
	var roots []string
	if err := json.Unmarshal([]byte(spec), &roots); err != nil {
		return nil, fmt.Errorf("bad write roots %q", spec)
	}
	return kept, restrictWrites(roots)
}

// restrictWrites applies a Landlock domain to the calling thread that
// denies every write outside roots (missing roots are skipped).
func restrictWrites(roots []string) error {
	abi, err := LandlockABI()
	if err != nil {
		return err
	}
	handled := landlockWrite(abi)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	// Only the first field: every ABI accepts the short struct.
	rfd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), 8, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %v", errno)
	}
	defer unix.Close(int(rfd))
	for _, root := range roots {
		fd, err := unix.Open(root, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		allowed := handled
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			allowed &= landlockFileRights
		}
		rule := unix.LandlockPathBeneathAttr{Allowed_access: allowed, Parent_fd: int32(fd)}
		_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, rfd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
		unix.Close(fd)
		if errno != 0 {
			return fmt.Errorf("landlock_add_rule %s: %v", root, errno)
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, rfd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %v", errno)
	}
	return nil
}

// WriteRootsFor is what --policy enforce lets a shell tool write: the
// workspace and DeviceWriteRoots.
func WriteRootsFor(workspace string) []string {
	return append([]string{workspace}, DeviceWriteRoots...)
}
