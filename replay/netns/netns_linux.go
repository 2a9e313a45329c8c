// Package netns gives a process a loopback-only network: a fresh network
// namespace whose only interface, lo, is up. An agent CLI checked there can
// reach the bridge on 127.0.0.1 and nothing else.
package netns

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// LoopbackUp brings lo up in the calling thread's network namespace (a new
// namespace starts with lo down).
func LoopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket for lo: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("read lo flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}

// CheckLoopbackOnly fails unless lo, up, is the only interface in sight.
func CheckLoopbackOnly() error {
	ifs, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("list network interfaces: %w", err)
	}
	if len(ifs) != 1 || ifs[0].Name != "lo" || ifs[0].Flags&net.FlagUp == 0 {
		names := make([]string, len(ifs))
		for i, f := range ifs {
			names[i] = f.Name
		}
		return fmt.Errorf("the network namespace is not loopback-only: interfaces %v", names)
	}
	return nil
}

// Cloneflags are the clone flags that start a child in a new network
// namespace (use with LoopbackUp in the child).
const Cloneflags = unix.CLONE_NEWNET
