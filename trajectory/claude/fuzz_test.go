package claude

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
)

const maxSeed = 16 << 10

// FuzzDecode checks that no input panics and that every accepted input
// gives consistent steps whose last prefix decodes again. The fuzzer
// minimizes each new input for up to a minute by default; run it as
//
//	go test -run XXX -fuzz FuzzDecode -fuzzminimizetime 2s ./trajectory/claude/
func FuzzDecode(f *testing.F) {
	for _, path := range sampleFiles(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		// Large seeds make the fuzzer spend minutes minimizing each new
		// input derived from them; the first lines of each file and the
		// hand-made shapes cover the same ground.
		if len(data) > maxSeed {
			data = data[:bytes.LastIndexByte(data[:maxSeed], '\n')+1]
		}
		f.Add(data)
	}
	for _, b := range badInputs() {
		f.Add([]byte(b.in))
	}
	for _, s := range shapeInputs() {
		f.Add([]byte(s.in))
	}
	format := New()
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := format.Decode(bytes.NewReader(data), trajectory.Options{})
		if err != nil {
			var te *trajectory.Error
			if !errors.As(err, &te) {
				t.Fatalf("error is not a *trajectory.Error: %v", err)
			}
			return
		}
		checkInvariants(t, tr, int64(len(data)))
		steps := tr.Steps()
		if len(steps) == 0 {
			return
		}
		n := len(steps)
		if trajectory.CheckBoundary(tr, n) != nil {
			return
		}
		var buf bytes.Buffer
		if err := format.WritePrefix(&buf, bytes.NewReader(data), int64(len(data)), tr, n); err != nil {
			if !trajectory.IsUnsupported(err) {
				t.Fatalf("WritePrefix(%d): %v", n, err)
			}
			return
		}
		cut, err := format.Decode(bytes.NewReader(buf.Bytes()), trajectory.Options{})
		if err != nil {
			t.Fatalf("prefix of step %d does not decode: %v", n, err)
		}
		if got := len(cut.Steps()); got != n {
			t.Fatalf("prefix of step %d has %d steps", n, got)
		}
	})
}

func checkInvariants(t *testing.T, tr *trajectory.Trajectory, size int64) {
	t.Helper()
	want := 1
	for i, a := range tr.Actions {
		if a.Step != 0 {
			if a.Step != want {
				t.Fatalf("action %d has step %d, want %d", i, a.Step, want)
			}
			want++
			for _, c := range a.Calls {
				if c.Observation == nil {
					t.Fatalf("step %d: call %s has no observation", a.Step, c.ID)
				}
			}
		} else if a.Complete() {
			t.Fatalf("action %d is complete but has no step", i)
		}
		checkLocator(t, a.Locator, size)
		for _, c := range a.Calls {
			checkLocator(t, c.Locator, size)
			if c.Observation != nil {
				checkLocator(t, c.Observation.Locator, size)
			}
		}
	}
}

func checkLocator(t *testing.T, l trajectory.Locator, size int64) {
	t.Helper()
	if l.Unit != "line" || l.First < 1 || l.Last < l.First || l.StartByte < 0 || l.EndByte <= l.StartByte || l.EndByte > size {
		t.Fatalf("bad locator %+v for a %d-byte file", l, size)
	}
}
