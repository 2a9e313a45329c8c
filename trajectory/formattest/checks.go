package formattest

import (
	"bytes"
	"fmt"
	"reflect"
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

// covers reports whether inner lies within outer. Indices compare only
// within one unit (an OpenCode export locates a call by its part within
// the action's message), and byte spans only where outer has one (JSON
// documents locate by element index alone).
func covers(outer, inner trajectory.Locator) bool {
	if inner.Unit == outer.Unit && (inner.First < outer.First || inner.Last > outer.Last) {
		return false
	}
	return outer.EndByte == 0 || inner.StartByte >= outer.StartByte && inner.EndByte <= outer.EndByte
}

// InFile returns the first locator of tr that cannot be a place in a file
// of size bytes: one that ends before it starts or past the file's end,
// or one in lines that starts before line 1 or holds no byte.
func InFile(tr *trajectory.Trajectory, size int) error {
	var err error
	eachLocator(tr, func(what string, l trajectory.Locator) bool {
		switch {
		case l.First > l.Last || l.StartByte < 0 || l.StartByte > l.EndByte || l.EndByte > int64(size):
			err = fmt.Errorf("%s: locator %+v is not a span of the %d-byte file", what, l, size)
		case l.Unit == "line" && (l.First < 1 || l.EndByte == l.StartByte):
			err = fmt.Errorf("%s: locator %+v names no line", what, l)
		}
		return err == nil
	})
	return err
}

// checkUnit requires every locator of tr to be in unit, when unit is not "".
func checkUnit(t testing.TB, tr *trajectory.Trajectory, unit string) {
	t.Helper()
	if unit == "" {
		return
	}
	eachLocator(tr, func(what string, l trajectory.Locator) bool {
		if l.Unit != unit {
			t.Fatalf("%s: locator %+v is not in %ss", what, l, unit)
		}
		return true
	})
}

// eachLocator calls fn with every locator of tr, the actions' and their
// calls' and results', until it returns false.
func eachLocator(tr *trajectory.Trajectory, fn func(what string, l trajectory.Locator) bool) {
	for i := range tr.Actions {
		a := &tr.Actions[i]
		if !fn(fmt.Sprintf("action %d", i), a.Locator) {
			return
		}
		for _, c := range a.Calls {
			if !fn("call "+c.ID, c.Locator) {
				return
			}
			if o := c.Observation; o != nil && !fn("result of call "+c.ID, o.Locator) {
				return
			}
		}
	}
}

// CheckInvariants fails the test when tr breaks Invariants.
func CheckInvariants(t testing.TB, tr *trajectory.Trajectory) {
	t.Helper()
	if err := Invariants(tr); err != nil {
		t.Fatal(err)
	}
}

// CheckPrefixRoundTrip cuts data, whose decode is full, after a sample of
// its steps (the first two, the middle one, the last two) and checks each
// cut as CheckPrefixes does.
func CheckPrefixRoundTrip(t testing.TB, f trajectory.Format, data []byte, full *trajectory.Trajectory,
	check func(t testing.TB, n int, cut []byte, pt *trajectory.Trajectory), opts ...cmp.Option) {
	t.Helper()
	CheckPrefixes(t, f, data, full, sampleSteps(len(full.Steps())), check, opts...)
}

// CheckPrefixes cuts data, whose decode is full, after each of steps and
// decodes each cut: it must have exactly that many steps, as many model
// turns as PrefixModelTurns says, and steps whose calls equal the
// original's under opts. check, when not nil, adds the format's own checks
// of each cut. Where CheckBoundary refuses a step (an incomplete batch
// comes before it), and before the first step and after the last,
// WritePrefix must refuse as CheckBoundary does.
func CheckPrefixes(t testing.TB, f trajectory.Format, data []byte, full *trajectory.Trajectory, steps []int,
	check func(t testing.TB, n int, cut []byte, pt *trajectory.Trajectory), opts ...cmp.Option) {
	t.Helper()
	all := full.Steps()
	for _, n := range steps {
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
			// DeepEqual first where it means the same as cmp: cmp.Diff
			// over every step of every cut is slow in a long file.
			if len(opts) == 0 && reflect.DeepEqual(all[i].Calls, s.Calls) {
				continue
			}
			if d := cmp.Diff(all[i].Calls, s.Calls, opts...); d != "" {
				t.Fatalf("step %d of prefix %d differs:\n%s", i+1, n, d)
			}
		}
		if check != nil {
			check(t, n, buf.Bytes(), pt)
		}
	}
	err := f.WritePrefix(&bytes.Buffer{}, bytes.NewReader(data), int64(len(data)), full, 0)
	CheckError(t, err, Malformed(0, "after-step 0: steps are numbered from 1"))
	err = f.WritePrefix(&bytes.Buffer{}, bytes.NewReader(data), int64(len(data)), full, len(all)+1)
	CheckError(t, err, Malformed(0, fmt.Sprintf("trajectory has %d complete steps", len(all))))
}

// AllSteps is every step of tr, for CheckPrefixes.
func AllSteps(tr *trajectory.Trajectory) []int {
	out := make([]int, len(tr.Steps()))
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// Verbatim is a check for CheckPrefixes of a format whose prefix keeps the
// records it keeps unchanged: the cut decodes to full's actions through the
// boundary, locators and all, with full's session and version; when
// bytePrefix is set the cut must also be the start of data.
func Verbatim(data []byte, full *trajectory.Trajectory, bytePrefix bool) func(t testing.TB, n int, cut []byte, pt *trajectory.Trajectory) {
	return func(t testing.TB, n int, cut []byte, pt *trajectory.Trajectory) {
		t.Helper()
		if bytePrefix && !bytes.HasPrefix(data, cut) {
			t.Fatalf("step %d: the prefix is not a byte prefix of the file", n)
		}
		want := full.Actions[:full.ActionIndex(n)+1]
		// DeepEqual first: cmp.Diff over hundreds of actions is slow, and
		// only a mismatch needs its report.
		if !reflect.DeepEqual(want, pt.Actions) {
			t.Fatalf("step %d: prefix actions differ (-original +prefix):\n%s", n, cmp.Diff(want, pt.Actions))
		}
		if pt.SessionID != full.SessionID || pt.Version != full.Version {
			t.Errorf("step %d: prefix has session %q version %q, want %q %q", n, pt.SessionID, pt.Version, full.SessionID, full.Version)
		}
	}
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
// decode must satisfy Invariants and InFile and cut after each of its
// steps into a prefix that decodes to that many steps. Where CheckBoundary
// refuses a step WritePrefix must refuse as it does; mayRefuse says at
// which other steps it may refuse (with a *trajectory.Error); nil means at
// none. It returns the decode, nil when Decode refused data.
func CheckDecode(t testing.TB, f trajectory.Format, data []byte, mayRefuse func(tr *trajectory.Trajectory, n int) bool) *trajectory.Trajectory {
	t.Helper()
	f.Detect(data)
	tr, err := f.Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		if _, ok := err.(*trajectory.Error); !ok {
			t.Fatalf("error is %T, not *trajectory.Error: %v", err, err)
		}
		CheckDecodePrefix(t, f, data, trajectory.Options{}, 1)
		return nil
	}
	CheckDecodePrefix(t, f, data, trajectory.Options{}, SomeSteps(tr)...)
	CheckInvariants(t, tr)
	if err := InFile(tr, len(data)); err != nil {
		t.Fatal(err)
	}
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
	return tr
}
