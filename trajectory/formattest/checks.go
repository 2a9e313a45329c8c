package formattest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
)

// Invariants returns the first way tr breaks what every successful decode
// must hold: steps are numbered 1..n in action order, an action without a
// step is not complete, every call of a step has its observation, and each
// action's locator is well formed and spans its calls and their results.
func Invariants(tr *trajectory.Trajectory) error {
	n := 0
	for i := range tr.Actions {
		a := &tr.Actions[i]
		if l := a.Locator; l.First > l.Last || l.StartByte > l.EndByte {
			return fmt.Errorf("action %d: locator %+v ends before it starts", i, l)
		}
		if a.Step == 0 {
			if a.Complete() {
				return fmt.Errorf("action %d is complete but has no step", i)
			}
			continue
		}
		n++
		if a.Step != n {
			return fmt.Errorf("action %d has step %d, want %d", i, a.Step, n)
		}
		for _, c := range a.Calls {
			if c.Observation == nil {
				return fmt.Errorf("step %d call %s has no observation", a.Step, c.ID)
			}
			if !covers(a.Locator, c.Locator) || !covers(a.Locator, c.Observation.Locator) {
				return fmt.Errorf("step %d: action locator %v does not cover call %s", a.Step, a.Locator, c.ID)
			}
		}
	}
	return nil
}

// covers reports whether inner lies within outer; byte spans count only
// where outer has one (JSON documents locate by element index alone).
func covers(outer, inner trajectory.Locator) bool {
	if inner.First < outer.First || inner.Last > outer.Last {
		return false
	}
	return outer.EndByte == 0 || inner.StartByte >= outer.StartByte && inner.EndByte <= outer.EndByte
}

// CheckInvariants fails the test when tr breaks Invariants.
func CheckInvariants(t testing.TB, tr *trajectory.Trajectory) {
	t.Helper()
	if err := Invariants(tr); err != nil {
		t.Fatal(err)
	}
}

// CheckPrefixRoundTrip cuts data, whose decode is full, after a sample of
// its steps (the first two, the middle one, the last two) and decodes each
// cut: it must have exactly that many steps, as many model turns as
// PrefixModelTurns says, and steps whose calls equal the original's under
// opts. check, when not nil, adds the format's own checks of each cut.
// Where CheckBoundary refuses a step (an incomplete batch comes before it),
// and after the last step, WritePrefix must refuse as CheckBoundary does.
func CheckPrefixRoundTrip(t testing.TB, f trajectory.Format, data []byte, full *trajectory.Trajectory,
	check func(t testing.TB, n int, cut []byte, pt *trajectory.Trajectory), opts ...cmp.Option) {
	t.Helper()
	steps := full.Steps()
	for _, n := range sampleSteps(len(steps)) {
		var buf bytes.Buffer
		err := f.WritePrefix(&buf, bytes.NewReader(data), int64(len(data)), full, n)
		if unreachable(t, full, n, err) {
			continue
		}
		if err != nil {
			t.Fatalf("step %d: %v", n, err)
		}
		pt, err := f.Decode(bytes.NewReader(buf.Bytes()), trajectory.Options{})
		if err != nil {
			t.Fatalf("step %d: prefix does not decode: %v\n%.300s", n, err, buf.Bytes())
		}
		if got := len(pt.Steps()); got != n {
			t.Fatalf("step %d: prefix decodes to %d steps", n, got)
		}
		if got, want := len(pt.Actions), f.PrefixModelTurns(full, n); got != want {
			t.Errorf("step %d: prefix has %d model turns, PrefixModelTurns says %d", n, got, want)
		}
		for i, s := range pt.Steps() {
			if d := cmp.Diff(steps[i].Calls, s.Calls, opts...); d != "" {
				t.Fatalf("step %d of prefix %d differs:\n%s", i+1, n, d)
			}
		}
		if check != nil {
			check(t, n, buf.Bytes(), pt)
		}
	}
	err := f.WritePrefix(&bytes.Buffer{}, bytes.NewReader(data), int64(len(data)), full, len(steps)+1)
	CheckError(t, err, Malformed(0, fmt.Sprintf("trajectory has %d complete steps", len(steps))))
}

// unreachable reports whether CheckBoundary refuses step n of tr, in which
// case err, WritePrefix's answer, must be that refusal.
func unreachable(t testing.TB, tr *trajectory.Trajectory, n int, err error) bool {
	t.Helper()
	berr := trajectory.CheckBoundary(tr, n)
	if berr == nil {
		return false
	}
	if err == nil || err.Error() != berr.Error() {
		t.Fatalf("step %d: WritePrefix = %v, want the boundary's refusal: %v", n, err, berr)
	}
	return true
}

// sampleSteps picks the boundaries a round trip tries out of n steps.
func sampleSteps(n int) []int {
	var out []int
	for _, k := range []int{1, 2, n / 2, n - 1, n} {
		if k >= 1 && k <= n && (len(out) == 0 || k > out[len(out)-1]) {
			out = append(out, k)
		}
	}
	return out
}

// CheckDecode is the body of a decoder's fuzz target. Neither Detect nor
// Decode may panic; Decode may fail only with a *trajectory.Error; and a
// decode must satisfy Invariants and cut after each of its steps into a
// prefix that decodes to that many steps. Where CheckBoundary refuses a
// step WritePrefix must refuse as it does; mayRefuse says at which other
// steps it may refuse (with a *trajectory.Error); nil means at none.
func CheckDecode(t testing.TB, f trajectory.Format, data []byte, mayRefuse func(tr *trajectory.Trajectory, n int) bool) {
	t.Helper()
	f.Detect(data)
	tr, err := f.Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		if _, ok := err.(*trajectory.Error); !ok {
			t.Fatalf("error is %T, not *trajectory.Error: %v", err, err)
		}
		return
	}
	CheckInvariants(t, tr)
	for n := 1; n <= len(tr.Steps()); n++ {
		var buf bytes.Buffer
		err := f.WritePrefix(&buf, bytes.NewReader(data), int64(len(data)), tr, n)
		if unreachable(t, tr, n, err) {
			continue
		}
		if err != nil {
			if _, ok := err.(*trajectory.Error); ok && mayRefuse != nil && mayRefuse(tr, n) {
				continue
			}
			t.Fatalf("WritePrefix step %d: %v (%T)", n, err, err)
		}
		pt, err := f.Decode(bytes.NewReader(buf.Bytes()), trajectory.Options{})
		if err != nil {
			t.Fatalf("prefix of step %d does not decode: %v", n, err)
		}
		if len(pt.Steps()) != n {
			t.Fatalf("prefix of step %d has %d steps", n, len(pt.Steps()))
		}
	}
}
