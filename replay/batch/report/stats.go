package report

import "math"

// Interval is a 95% confidence interval for a share, as fractions.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// z95 is the standard normal quantile for a two-sided 95% interval.
const z95 = 1.959963984540054

// wilson is the Wilson score interval for k successes in n trials: unlike
// the normal approximation it stays inside [0, 1] and is not zero-width at
// 0% or 100% (3 of 3 is 44%–100%, not "100% ± 0"). nil when n is 0.
func wilson(k, n int) *Interval {
	if n <= 0 {
		return nil
	}
	lo, hi := wilsonBounds(k, n)
	return &Interval{Low: round4(lo), High: round4(hi)}
}

// wilsonBounds is the Wilson interval unrounded (n > 0), for intervals
// built from it.
func wilsonBounds(k, n int) (lo, hi float64) {
	p, nf, z2 := float64(k)/float64(n), float64(n), z95*z95
	denom := 1 + z2/nf
	center := (p + z2/(2*nf)) / denom
	half := z95 * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / denom
	return math.Max(0, center-half), math.Min(1, center+half)
}
