package toolinit

import (
	"syscall"
	"unsafe"
)

// Landlock's system calls and flags (the same numbers on every
// architecture).
const (
	sysLandlockCreateRuleset = 444
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446
	landlockRulesetVersion   = 1
	landlockRulePathBeneath  = 1
	oPath                    = 0x200000 // O_PATH, which package syscall lacks
)

// Landlock's file system access rights.
const (
	accessWriteFile  = 1 << 1
	accessRemoveDir  = 1 << 4
	accessRemoveFile = 1 << 5
	accessMakeChar   = 1 << 6
	accessMakeDir    = 1 << 7
	accessMakeReg    = 1 << 8
	accessMakeSock   = 1 << 9
	accessMakeFifo   = 1 << 10
	accessMakeBlock  = 1 << 11
	accessMakeSym    = 1 << 12
	accessRefer      = 1 << 13
	accessTruncate   = 1 << 14
)

// LandlockWrite is every write right of the ABI: creating, removing,
// renaming into, truncating and writing files. Reading and executing stay
// unrestricted, and device ioctls are left alone (ABI 5's IOCTL_DEV would
// break terminals).
func LandlockWrite(abi int) uint64 {
	r := uint64(accessWriteFile | accessRemoveDir | accessRemoveFile | accessMakeChar | accessMakeDir |
		accessMakeReg | accessMakeSock | accessMakeFifo | accessMakeBlock | accessMakeSym)
	if abi >= 2 {
		r |= accessRefer
	}
	if abi >= 3 {
		r |= accessTruncate
	}
	return r
}

// landlockFileRights are the rights a rule on a non-directory may carry.
const landlockFileRights = accessWriteFile | accessTruncate

// LandlockABI is the kernel's Landlock ABI version, or the errno of
// asking for it (ENOSYS: no Landlock; EOPNOTSUPP: built in, not enabled).
func LandlockABI() (int, syscall.Errno) {
	v, _, errno := syscall.RawSyscall(sysLandlockCreateRuleset, 0, 0, landlockRulesetVersion)
	if errno != 0 {
		return 0, errno
	}
	return int(v), 0
}

// restrictWrites applies a Landlock domain to the calling thread, and so
// to the tool forked from it, that denies every write outside roots
// (missing roots are skipped). It needs no_new_privs, which setup sets.
func restrictWrites(roots []string) string {
	abi, errno := LandlockABI()
	if errno != 0 {
		return "landlock_create_ruleset: " + errno.Error()
	}
	handled := LandlockWrite(abi)
	// Only the first field: every ABI accepts the short struct.
	attr := struct{ handledAccessFS uint64 }{handled}
	rfd, _, errno := syscall.RawSyscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(&attr)), 8, 0)
	if errno != 0 {
		return "landlock_create_ruleset: " + errno.Error()
	}
	defer syscall.Close(int(rfd))
	for _, root := range roots {
		fd, err := syscall.Open(root, oPath|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		allowed := handled
		if syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			allowed &= landlockFileRights
		}
		// struct landlock_path_beneath_attr is packed: a u64, then an s32.
		var rule [12]byte
		*(*uint64)(unsafe.Pointer(&rule[0])) = allowed
		*(*int32)(unsafe.Pointer(&rule[8])) = int32(fd)
		_, _, errno := syscall.RawSyscall6(sysLandlockAddRule, rfd, landlockRulePathBeneath, uintptr(unsafe.Pointer(&rule[0])), 0, 0, 0)
		syscall.Close(fd)
		if errno != 0 {
			return "landlock_add_rule " + root + ": " + errno.Error()
		}
	}
	if _, _, errno := syscall.RawSyscall(sysLandlockRestrictSelf, rfd, 0, 0); errno != 0 {
		return "landlock_restrict_self: " + errno.Error()
	}
	return ""
}
