package report

import "testing"

func TestWilson(t *testing.T) {
	// Reference values: the Wilson score interval at z = 1.96 (e.g.
	// Newcombe 1998, table I: 0/10 → 0–0.2775, 1/10 → 0.0179–0.4042).
	for _, tc := range []struct {
		k, n      int
		low, high float64
	}{
		{0, 10, 0, 0.2775},
		{1, 10, 0.0179, 0.4042},
		{10, 10, 0.7225, 1},
		{3, 3, 0.4385, 1},
		{1, 2, 0.0945, 0.9055},
		{50, 100, 0.4038, 0.5962},
	} {
		got := wilson(tc.k, tc.n)
		if got == nil || got.Low != tc.low || got.High != tc.high {
			t.Errorf("wilson(%d, %d) = %+v, want %v–%v", tc.k, tc.n, got, tc.low, tc.high)
		}
	}
	if wilson(0, 0) != nil {
		t.Error("wilson(0, 0) must be nil: no trials, no interval")
	}
}
