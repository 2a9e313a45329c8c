//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/pvisor/pvisor/replay/internal/clitest"
)

// TestMain gives the whole suite an empty HOME of its own (see
// clitest.EmptyHome for why).
func TestMain(m *testing.M) {
	cleanup, err := clitest.EmptyHome()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}
