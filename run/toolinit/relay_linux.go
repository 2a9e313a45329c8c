package toolinit

import (
	"strconv"
	"syscall"
)

// RelayPort is where a tool's init listens, on 127.0.0.1 inside the
// tool's network namespace, for the tools' proxy requests.
const RelayPort = 3128

// RelayAddr is RelayPort as an address.
const RelayAddr = "127.0.0.1:3128"

// ProxyURL is the relay as the tools' environment names it.
const ProxyURL = "http://" + RelayAddr

// relay listens on RelayAddr and passes every accepted connection to the
// egress proxy over ctrl, the init's end of the proxy's socketpair. It
// returns once listening; the relay then runs until the init exits. The
// listening socket and ctrl are close-on-exec, so the tool inherits
// neither.
func relay(ctrl int) string {
	l, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return "egress relay: socket: " + err.Error()
	}
	_ = syscall.SetsockoptInt(l, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	if err := syscall.Bind(l, &syscall.SockaddrInet4{Port: RelayPort, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(l)
		return "egress relay: listen on " + RelayAddr + ": " + err.Error()
	}
	if err := syscall.Listen(l, 128); err != nil {
		syscall.Close(l)
		return "egress relay: listen on " + RelayAddr + ": " + err.Error()
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(ctrl), syscall.F_SETFD, syscall.FD_CLOEXEC); errno != 0 {
		syscall.Close(l)
		return "egress relay: descriptor " + strconv.Itoa(ctrl) + ": " + errno.Error()
	}
	// Blocking descriptors: the goroutine's thread blocks in accept and
	// sendmsg, which the runtime hands off like any blocking syscall.
	go func() {
		for {
			c, _, err := syscall.Accept4(l, syscall.SOCK_CLOEXEC)
			if err == syscall.EBADF || err == syscall.EINVAL || err == syscall.ENOTSOCK {
				return // the listener is gone
			}
			if err == syscall.EMFILE || err == syscall.ENFILE || err == syscall.ENOBUFS || err == syscall.ENOMEM {
				// The pending connection stays: no spinning.
				ts := syscall.Timespec{Nsec: 10e6}
				_ = syscall.Nanosleep(&ts, nil)
				continue
			}
			if err != nil {
				continue // EINTR, an aborted connection
			}
			// A send that fails means the proxy is gone: the tool's
			// connection ends, nothing goes around it.
			for {
				err = syscall.Sendmsg(ctrl, []byte{'c'}, syscall.UnixRights(c), nil, 0)
				if err != syscall.EINTR {
					break
				}
			}
			syscall.Close(c)
		}
	}()
	return ""
}
