// Package nsrelay is the tool init's side of the egress proxy: a listener
// inside the tool's network namespace that hands every connection to the
// proxy outside. It imports neither net nor the proxy, so that linking it
// into the tool init (package run) adds no package init to the start of
// every isolated call: the init is this binary re-executed once per call.
package nsrelay

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Port is where a tool's init listens, on 127.0.0.1 inside the tool's
// network namespace, for the tools' proxy requests.
const Port = 3128

// NamespaceAddr is Port as an address.
const NamespaceAddr = "127.0.0.1:3128"

// ProxyURL is the proxy as the tools' environment names it.
const ProxyURL = "http://" + NamespaceAddr

// Relay listens on NamespaceAddr and passes every accepted connection to
// the proxy over ctrl (the child end of the proxy's Attach). It returns
// once listening; the relay then runs until the init exits. The listening
// socket and ctrl are close-on-exec, so the tool inherits neither.
func Relay(ctrl *os.File) error {
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("egress relay: socket: %w", err)
	}
	_ = unix.SetsockoptInt(l, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(l, &unix.SockaddrInet4{Port: Port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(l)
		return fmt.Errorf("egress relay: listen on %s: %w", NamespaceAddr, err)
	}
	if err := unix.Listen(l, 128); err != nil {
		unix.Close(l)
		return fmt.Errorf("egress relay: listen on %s: %w", NamespaceAddr, err)
	}
	// The raw descriptor, blocking: the goroutine's thread blocks in accept
	// and sendmsg, which the runtime hands off like any blocking syscall.
	cfd := int(ctrl.Fd())
	unix.CloseOnExec(cfd)
	go func() {
		for {
			c, _, err := unix.Accept4(l, unix.SOCK_CLOEXEC)
			if err == unix.EBADF || err == unix.EINVAL || err == unix.ENOTSOCK {
				break // the listener is gone
			}
			if err == unix.EMFILE || err == unix.ENFILE || err == unix.ENOBUFS || err == unix.ENOMEM {
				time.Sleep(10 * time.Millisecond) // the pending connection stays: no spinning
				continue
			}
			if err != nil {
				continue // EINTR, an aborted connection
			}
			// A send that fails means the proxy is gone: the tool's
			// connection ends, nothing goes around it.
			for {
				err = unix.Sendmsg(cfd, []byte{'c'}, unix.UnixRights(c), nil, 0)
				if err != unix.EINTR {
					break
				}
			}
			unix.Close(c)
		}
		runtime.KeepAlive(ctrl) // its finalizer would close cfd
	}()
	return nil
}
