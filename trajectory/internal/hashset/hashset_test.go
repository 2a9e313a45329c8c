package hashset

import (
	"math/rand/v2"
	"testing"
)

// The set agrees with a map on membership and size, across many merges,
// with repeated members and with members that sort before, between and
// after the ones already merged.
func TestSetAgreesWithMap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		space uint64 // values drawn from [0, space): small spaces repeat
	}{
		{"empty", 0, 1},
		{"below one merge", flushAt - 1, 1 << 62},
		{"exactly one merge", flushAt, 1 << 62},
		{"many merges", 10*flushAt + 17, 1 << 62},
		{"mostly repeats", 5 * flushAt, flushAt + 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.n)))
			var s Set
			want := map[uint64]bool{}
			for i := 0; i < tc.n; i++ {
				h := rng.Uint64N(tc.space)
				s.Add(h)
				want[h] = true
				if i%997 == 0 && !s.Has(h) {
					t.Fatalf("after %d adds: %d just added is missing", i+1, h)
				}
			}
			if s.Len() != len(want) {
				t.Errorf("Len %d, want %d", s.Len(), len(want))
			}
			for h := range want {
				if !s.Has(h) {
					t.Fatalf("member %d missing", h)
				}
			}
			misses := 0
			for i := 0; i < 10000; i++ {
				h := rng.Uint64()
				if s.Has(h) != want[h] {
					t.Fatalf("Has(%d) = %v, want %v", h, s.Has(h), want[h])
				}
				if !want[h] {
					misses++
				}
			}
			if misses == 0 {
				t.Fatal("no absent value was looked up: the case tests nothing")
			}
			for i := 1; i < len(s.sorted); i++ {
				if s.sorted[i-1] >= s.sorted[i] {
					t.Fatalf("sorted members out of order at %d: %d, %d", i, s.sorted[i-1], s.sorted[i])
				}
			}
		})
	}
}

// Members cost about 8 bytes each once merged: a map would take several
// times that.
func TestSetSize(t *testing.T) {
	var s Set
	const n = 100 * flushAt
	for i := uint64(0); i < n; i++ {
		s.Add(i * 0x9e3779b97f4a7c15)
	}
	if got := cap(s.sorted); got > 2*n {
		t.Errorf("%d members held in a slice of %d", n, got)
	}
}
