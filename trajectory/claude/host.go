package claude

import "golang.org/x/sys/unix"

// hostOSVersion is this machine as Node's os.type() + " " + os.release()
// names it (an agent CLI that records its machine, Claude Code, writes
// that); "" when the kernel cannot be asked.
func hostOSVersion() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
}
