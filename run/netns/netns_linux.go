// Package netns makes a network namespace whose only interface is lo and
// puts work into it from a process that stays outside: a listener made in
// it (the bridge and the egress proxy serve such listeners from the host
// side), a process started in it (the continued agent CLI). A network
// namespace belongs to a thread, so each entry runs on a locked OS thread
// and leaves it; a thread that cannot go back is never reused.
package netns

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	toolrun "github.com/pvisor/pvisor/run"
)

// NS is a loopback-only network namespace, held open by a descriptor.
type NS struct{ fd *os.File }

// New makes the namespace and brings its lo up. It needs CAP_SYS_ADMIN
// (root).
func New() (*NS, error) {
	var ns *NS
	err := onThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("network namespace: %w", err)
		}
		f, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			return err
		}
		if err := toolrun.LoopbackUp(); err != nil {
			f.Close()
			return err
		}
		ns = &NS{fd: f}
		return nil
	})
	return ns, err
}

// Do runs fn on the calling goroutine with its thread in the namespace:
// sockets fn makes are the namespace's, and a process fn starts (a fork
// happens on the calling thread) is born in it.
func (n *NS) Do(fn func() error) error {
	return onThread(func() error {
		if err := unix.Setns(int(n.fd.Fd()), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("enter the network namespace: %w", err)
		}
		return fn()
	})
}

// Listen listens on addr (a loopback address) inside the namespace; the
// listener is served from anywhere.
func (n *NS) Listen(addr string) (net.Listener, error) {
	var l net.Listener
	err := n.Do(func() error {
		var err error
		l, err = net.Listen("tcp4", addr)
		return err
	})
	return l, err
}

// Close releases the namespace; it ends once no process or socket is in it.
func (n *NS) Close() error { return n.fd.Close() }

// onThread runs fn on a locked OS thread and puts the thread back in the
// network namespace it started in. When that fails the thread stays locked
// and so ends with the goroutine's next exit from LockOSThread's scope
// (the runtime then kills it), never serving other goroutines from inside.
func onThread(fn func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("network namespace: %w", err)
	}
	defer orig.Close()
	ferr := fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// Locked and not unlocked: the runtime ends this thread when the
		// goroutine exits.
		return errors.Join(ferr, fmt.Errorf("leave the network namespace: %w", err))
	}
	runtime.UnlockOSThread()
	return ferr
}
