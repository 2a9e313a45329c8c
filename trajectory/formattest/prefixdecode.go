package formattest

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
)

// CheckDecodePrefix requires trajectory.DecodePrefix of data at each of
// steps to agree with f.Decode: the same error when Decode fails, else the
// same trajectory holding only the actions through the boundary step (a
// format may keep some after it) with Cut saying whether any were left
// out, and the same WritePrefix and PrefixModelTurns. A format without a
// DecodePrefix passes trivially.
func CheckDecodePrefix(t testing.TB, f trajectory.Format, data []byte, opts trajectory.Options, steps ...int) {
	t.Helper()
	if _, ok := f.(trajectory.PrefixDecoder); !ok {
		return
	}
	full, ferr := f.Decode(bytes.NewReader(data), opts)
	for _, n := range steps {
		pt, err := trajectory.DecodePrefix(f, bytes.NewReader(data), bytes.NewReader(data), opts, n)
		if ferr != nil || err != nil {
			if fmt.Sprint(err) != fmt.Sprint(ferr) || reflect.TypeOf(err) != reflect.TypeOf(ferr) {
				t.Fatalf("DecodePrefix(%d) = %v, Decode = %v", n, err, ferr)
			}
			if e, ok := err.(*trajectory.Error); ok && *e != *ferr.(*trajectory.Error) {
				t.Fatalf("DecodePrefix(%d) = %+v, Decode = %+v", n, *e, *ferr.(*trajectory.Error))
			}
			continue
		}
		if err := prefixOf(full, pt, n); err != nil {
			t.Fatalf("DecodePrefix(%d): %v", n, err)
		}
		// What prepare does with it must not change either.
		var want, got bytes.Buffer
		werr := f.WritePrefix(&want, bytes.NewReader(data), int64(len(data)), full, n)
		gerr := f.WritePrefix(&got, bytes.NewReader(data), int64(len(data)), pt, n)
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || !bytes.Equal(want.Bytes(), got.Bytes()) {
			t.Fatalf("WritePrefix(%d) of the DecodePrefix: %v, %d bytes; of the whole decode: %v, %d bytes", n, gerr, got.Len(), werr, want.Len())
		}
		if werr == nil && f.PrefixModelTurns(full, n) != f.PrefixModelTurns(pt, n) {
			t.Fatalf("PrefixModelTurns(%d) = %d, whole decode %d", n, f.PrefixModelTurns(pt, n), f.PrefixModelTurns(full, n))
		}
	}
}

// prefixOf says how pt, a DecodePrefix at step n, differs from what it must
// be given full, the whole decode.
func prefixOf(full, pt *trajectory.Trajectory, n int) error {
	keep := len(full.Actions)
	if i := full.ActionIndex(n); i >= 0 {
		keep = i + 1
	}
	if len(pt.Actions) < keep || len(pt.Actions) > len(full.Actions) {
		return fmt.Errorf("kept %d actions, want %d to %d", len(pt.Actions), keep, len(full.Actions))
	}
	want := *full
	want.Actions = full.Actions[:len(pt.Actions)]
	want.Cut = 0
	if len(pt.Actions) < len(full.Actions) {
		want.Cut = n
	}
	if !reflect.DeepEqual(&want, pt) {
		return fmt.Errorf("differs from the whole decode (-whole +prefix):\n%s", cmp.Diff(&want, pt))
	}
	return nil
}

// SomeSteps are the boundaries CheckDecodePrefix is worth running at for
// tr: the first, second, middle and last steps and one past the last (each
// one decodes the whole file).
func SomeSteps(tr *trajectory.Trajectory) []int {
	n := len(tr.Steps())
	return append(sampleSteps(n), n+1)
}
