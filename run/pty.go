package run

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openPTY allocates a pseudo-terminal pair. The master stays non-blocking
// (pollable, so drain deadlines work); the slave becomes the child's stdio.
func openPTY(rows, cols uint16) (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	rc, err := master.SyscallConn()
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	var n int
	var ierr error
	cerr := rc.Control(func(fd uintptr) {
		if ierr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ierr != nil {
			return
		}
		if n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN); ierr != nil {
			return
		}
		if rows == 0 || cols == 0 {
			rows, cols = 24, 80
		}
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	})
	if cerr != nil || ierr != nil {
		master.Close()
		if cerr != nil {
			return nil, nil, cerr
		}
		return nil, nil, ierr
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}
