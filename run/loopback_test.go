package run

import (
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCheckLoopbackOnly runs the check in a fresh network namespace of a
// thread of its own (the thread is never unlocked, so the runtime drops it
// afterwards): it must read that thread's namespace, not the process's.
func TestCheckLoopbackOnly(t *testing.T) {
	if unix.Geteuid() != 0 {
		t.Skip("a fresh network namespace needs root")
	}
	for _, tc := range []struct {
		name    string
		up      bool
		wantErr string
	}{
		{"lo down", false, "interfaces [lo]"},
		{"lo up", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errc := make(chan error, 1)
			go func() {
				runtime.LockOSThread()
				if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
					errc <- err
					return
				}
				if tc.up {
					if err := LoopbackUp(); err != nil {
						errc <- err
						return
					}
				}
				errc <- CheckLoopbackOnly()
			}()
			err := <-errc
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("CheckLoopbackOnly: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("CheckLoopbackOnly: %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}
