package egress

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// Attach makes the channel one tool init hands its connections over: a
// socketpair whose child end the init inherits (see Relay). Connections
// that arrive on it belong to the call current now. start must be called
// once the init was started (ok) or could not be (!ok); the child end is
// the caller's to close after the start either way.
func (p *Proxy) Attach() (child *os.File, start func(ok bool), err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("egress: socketpair: %w", err)
	}
	parent := os.NewFile(uintptr(fds[0]), "egress-parent")
	child = os.NewFile(uintptr(fds[1]), "egress-child")
	call := p.CurrentCall()
	start = func(ok bool) {
		if !ok {
			parent.Close()
			return
		}
		c, err := net.FileConn(parent)
		parent.Close()
		if err != nil {
			return
		}
		uc, ok2 := c.(*net.UnixConn)
		if !ok2 {
			c.Close()
			return
		}
		if !p.register(uc) {
			return
		}
		go func() {
			defer p.wg.Done()
			defer p.untrack(uc)
			p.receive(uc, call)
		}()
	}
	return child, start, nil
}

// receive serves every connection the init passes until it exits (EOF)
// or the proxy closes.
func (p *Proxy) receive(uc *net.UnixConn, call Call) {
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		_, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
		if err != nil {
			return
		}
		if oobn == 0 {
			// A zero-length datagram with no descriptor is the peer's EOF.
			return
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			continue
		}
		for _, m := range msgs {
			fds, err := unix.ParseUnixRights(&m)
			if err != nil {
				continue
			}
			for i, fd := range fds {
				f := os.NewFile(uintptr(fd), "egress-client")
				if i > 0 {
					// One connection per message; more is not the init's.
					f.Close()
					continue
				}
				c, err := net.FileConn(f)
				f.Close()
				if err != nil {
					continue
				}
				p.Serve(c, call)
			}
		}
	}
}
