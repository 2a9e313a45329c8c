package run

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/pvisor/pvisor/run/toolinit"
)

// DeviceWriteRoots are the files every shell tool may write under
// --policy enforce besides the workspace: the character devices programs
// open for writing as a matter of course (2>/dev/null, a terminal). No
// temporary directory is among them: the tool init gives a call none of
// its own, and /tmp is shared with the host.
var DeviceWriteRoots = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// LandlockABI is the kernel's Landlock ABI version, or an error that says
// why --policy enforce cannot deny shell tools' writes here.
func LandlockABI() (int, error) {
	v, errno := toolinit.LandlockABI()
	switch {
	case errno == unix.ENOSYS:
		return 0, fmt.Errorf("this kernel has no Landlock (landlock_create_ruleset: ENOSYS; it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)")
	case errno == unix.EOPNOTSUPP:
		return 0, fmt.Errorf("Landlock is built into this kernel but not enabled (add landlock to the lsm= boot parameter)")
	case errno != 0:
		return 0, fmt.Errorf("landlock_create_ruleset: %v", errno)
	}
	return v, nil
}

// WriteRootsFor is what --policy enforce lets a shell tool write: the
// workspace and DeviceWriteRoots.
func WriteRootsFor(workspace string) []string {
	return append([]string{workspace}, DeviceWriteRoots...)
}
