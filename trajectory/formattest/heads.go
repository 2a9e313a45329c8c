package formattest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
)

// Heads are starts of files, small enough to write by hand: the shapes
// detection is most likely to confuse. Each agent's folder keeps its own
// in testdata/heads/NAME.head (a head its format must claim); those that no
// format may claim are in formattest's testdata/unclaimed. Every format is
// checked against all of them, so a new agent's heads are also checked
// against every other format.
const (
	ownHeads       = "testdata/heads/*.head"
	otherHeads     = "../*/testdata/heads/*.head"
	unclaimedHeads = "../formattest/testdata/unclaimed/*.head"
)

// head is one hand-written head; own says it belongs to the format under
// test (the package the test runs in).
type head struct {
	path string
	own  bool
	text []byte
}

// loadHeads reads the heads as seen from the package directory a test runs
// in: its own, every other agent folder's, and the unclaimed ones.
func loadHeads(t testing.TB) []head {
	t.Helper()
	own, _ := filepath.Glob(ownHeads)
	ownDir, _ := filepath.Abs(filepath.Dir(ownHeads))
	others, _ := filepath.Glob(otherHeads)
	unclaimed, _ := filepath.Glob(unclaimedHeads)
	var out []head
	read := func(p string, own bool) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, head{path: p, own: own, text: b})
	}
	for _, p := range own {
		read(p, true)
	}
	for _, p := range append(others, unclaimed...) {
		if d, _ := filepath.Abs(filepath.Dir(p)); d != ownDir {
			read(p, false)
		}
	}
	if len(unclaimed) == 0 {
		t.Fatalf("no heads under %s: run the test from a package folder of trajectory/", unclaimedHeads)
	}
	return out
}

// checkHeads requires f to claim the heads of its own folder and no others.
func checkHeads(t testing.TB, f trajectory.Format) {
	t.Helper()
	for _, h := range loadHeads(t) {
		if got := f.Detect(h.text); got != h.own {
			t.Errorf("Detect(%s) = %v, want %v", h.path, got, h.own)
		}
	}
}
