package tested

import "testing"

// TestSatisfies: the engines.node ranges npm packages declare.
func TestSatisfies(t *testing.T) {
	for _, tc := range []struct {
		v, rng     string
		ok, unders bool
	}{
		{"v22.23.5", ">=22.19.0", true, true},
		{"v20.20.2", ">=22.19.0", false, true},
		{"22.19.0", ">=22.19.0", true, true},
		{"22.18.9", ">=22.19", false, true},
		{"20.20.2", ">=18", true, true},
		{"20.20.2", "^20.17.0 || >=22.9.0", true, true},
		{"21.0.0", "^20.17.0 || >=22.9.0", false, true},
		{"22.9.0", "^20.17.0 || >=22.9.0", true, true},
		{"22.0.0", "18 - 22", true, true},
		{"23.0.0", "18 - 22", false, true},
		{"22.5.0", "18 - 22.4", false, true},
		{"1.2.9", "~1.2.3", true, true},
		{"1.3.0", "~1.2.3", false, true},
		{"0.2.9", "^0.2.3", true, true},
		{"0.3.0", "^0.2.3", false, true},
		{"9.0.0", "*", true, true},
		{"9.0.0", "", true, true},
		{"20.1.0", "20.x", true, true},
		{"21.0.0", "20.x", false, true},
		{"20.1.0", ">20", false, true},
		{"21.0.0", ">20", true, true},
		{"20.9.0", "<=20", true, true},
		{"20.9.0", "<20.9.0", false, true},
		{"20.9.0", ">=node", false, false},
		{"not-a-version", ">=1", false, false},
	} {
		ok, u := Satisfies(tc.v, tc.rng)
		if ok != tc.ok || u != tc.unders {
			t.Errorf("Satisfies(%q, %q) = %v, %v; want %v, %v", tc.v, tc.rng, ok, u, tc.ok, tc.unders)
		}
	}
}
