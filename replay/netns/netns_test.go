package netns

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func TestLoopbackOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a network namespace")
	}
	done := make(chan error)
	go func() {
		// The thread stays locked and is discarded with the goroutine:
		// it never goes back to the runtime in a foreign namespace.
		runtime.LockOSThread()
		if err := unix.Unshare(Cloneflags); err != nil {
			done <- err
			return
		}
		if err := CheckLoopbackOnly(); err == nil {
			t.Error("lo is reported up before LoopbackUp")
		}
		if err := LoopbackUp(); err != nil {
			done <- err
			return
		}
		done <- CheckLoopbackOnly()
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
