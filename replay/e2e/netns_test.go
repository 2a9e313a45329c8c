//go:build e2e

package e2e

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	toolrun "github.com/pvisor/pvisor/run"
)

// enterLoopbackNetns moves the calling goroutine's thread into a fresh network
// namespace whose only interface is lo, brought up. Listeners the goroutine opens
// afterwards and processes it starts live in that namespace, so the fake model and
// the CLI can talk over 127.0.0.1 while nothing can leave the machine.
//
// The thread stays locked and is never handed back: when the (sub)test goroutine
// ends, the runtime destroys it instead of reusing a thread in a foreign namespace.
// Threads the runtime creates meanwhile come from its template thread, not this one.
func enterLoopbackNetns(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the CLIs run in a private network namespace (unshare CLONE_NEWNET)")
	}
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		t.Fatalf("unshare network namespace: %v (run as root on Linux, outside a seccomp profile that blocks unshare)", err)
	}
	if err := toolrun.LoopbackUp(); err != nil {
		t.Fatal(err)
	}
	if err := toolrun.CheckLoopbackOnly(); err != nil {
		t.Fatal(err)
	}
}
