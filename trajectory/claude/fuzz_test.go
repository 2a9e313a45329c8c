package claude

import (
	"bytes"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

const maxSeed = 16 << 10

// FuzzDecode checks that no input panics and that every accepted input
// keeps the model's invariants and cuts after each of its steps. The
// fuzzer minimizes each new input for up to a minute by default; run it as
//
//	go test -run XXX -fuzz FuzzDecode -fuzzminimizetime 2s ./trajectory/claude/
func FuzzDecode(f *testing.F) {
	// Large seeds make the fuzzer spend minutes minimizing each new input
	// derived from them; the first lines of each file and the hand-made
	// shapes cover the same ground. The corpus adds the small files whole.
	for _, path := range corpus.Files(f) {
		if data := formattest.Head(f, path); len(data) > maxSeed {
			f.Add(data[:bytes.LastIndexByte(data[:maxSeed], '\n')+1])
		}
	}
	for _, s := range shapeInputs() {
		f.Add([]byte(s.in))
	}
	corpus.Fuzz(f, maxSeed, cutInsideNextResponse)
}

// cutInsideNextResponse reports whether a later response starts before
// the last record of step n ends (a result written after the next
// response began), where the file cannot be cut after step n.
func cutInsideNextResponse(tr *trajectory.Trajectory, n int) bool {
	i := tr.ActionIndex(n)
	end := tr.Actions[i].Locator.EndByte
	for _, c := range tr.Actions[i].Calls {
		end = max(end, c.Observation.Locator.EndByte)
	}
	for _, a := range tr.Actions[i+1:] {
		if a.Locator.StartByte < end {
			return true
		}
	}
	return false
}
