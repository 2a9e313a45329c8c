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

// TestNewcombe checks the hybrid score interval of a difference of two
// shares against Newcombe (1998), table II, method 10.
func TestNewcombe(t *testing.T) {
	for _, tc := range []struct {
		k1, n1, k2, n2 int
		low, high      float64
	}{
		{56, 70, 48, 80, 0.0524, 0.3339},
		{9, 10, 3, 10, 0.1705, 0.8090},
		{6, 7, 2, 7, 0.0582, 0.8062},
		{5, 56, 0, 29, -0.0381, 0.1926},
		{0, 10, 0, 20, -0.1611, 0.2775},
		{0, 10, 0, 10, -0.2775, 0.2775},
	} {
		d := newcombe(tc.k1, tc.n1, tc.k2, tc.n2)
		if d.CI.Low != tc.low || d.CI.High != tc.high {
			t.Errorf("%d/%d − %d/%d: %+v, want %v to %v", tc.k1, tc.n1, tc.k2, tc.n2, d.CI, tc.low, tc.high)
		}
	}
}
