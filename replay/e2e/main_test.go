//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/pvisor/pvisor/overlay"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/internal/clitest"
)

// TestMain gives the whole suite an empty HOME of its own (see
// clitest.EmptyHome for why).
// It is also the overlay worker (--overlayfs-path, --safe), as pvisor's
// main is: the engine re-executes /proc/self/exe in the new namespaces.
func TestMain(m *testing.M) {
	if overlay.IsChild() {
		overlay.ChildMain(func() int {
			req, err := replay.ChildRequest()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			os.Stdout.Write(replay.Run(context.Background(), req).Line())
			return 0
		})
	}
	cleanup, err := clitest.EmptyHome()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}
