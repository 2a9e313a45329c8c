package report

import (
	"math"
	"slices"
	"sort"
)

// aggregate groups runs (already sorted by agent, upstream, boundary).
func aggregate(runs []Run) []Group {
	groups := []Group{}
	for i := 0; i < len(runs); {
		j := i
		for j < len(runs) && runs[j].Agent == runs[i].Agent && runs[j].Upstream == runs[i].Upstream &&
			runs[j].AgentVersion == runs[i].AgentVersion && runs[j].AfterStep == runs[i].AfterStep {
			j++
		}
		groups = append(groups, group(runs[i:j]))
		i = j
	}
	return groups
}

func group(runs []Run) Group {
	g := Group{Agent: runs[0].Agent, Upstream: runs[0].Upstream, AgentVersion: runs[0].AgentVersion, AfterStep: runs[0].AfterStep,
		Runs: len(runs), FailuresByCategory: map[string]int{}, RecordedVersions: []string{}, Model: runs[0].Model}
	outcomesOf(&g, runs)
	var names, exact int
	var sims, walls []float64
	for _, r := range runs {
		if r.RecordedVersion != "" && !slices.Contains(g.RecordedVersions, r.RecordedVersion) {
			g.RecordedVersions = append(g.RecordedVersions, r.RecordedVersion)
		}
		walls = append(walls, float64(r.WallMS))
		if r.failure != "" {
			g.Failed++
			g.FailuresByCategory[r.failure]++
		}
		if na := r.NextAction; na != nil {
			g.Compared++
			if na.ToolNamesEqual {
				names++
			}
			if na.ExactTool {
				exact++
			}
			if na.TextSimilarity != nil {
				sims = append(sims, *na.TextSimilarity)
			}
		}
		if d := r.Observations; d != nil {
			g.Observations.Calls += d.Calls
			g.Observations.Exact += d.Exact
			g.Observations.NormalizedExact += d.NormalizedExact
			g.Observations.Different += d.Different
		}
	}
	g.ExactToolMatches = exact
	if g.Compared > 0 {
		g.ToolNameAgreement = ratio(names, g.Compared)
		g.ExactToolAgreement = ratio(exact, g.Compared)
		g.ToolNameAgreementCI, g.ExactToolAgreementCI = wilson(names, g.Compared), wilson(exact, g.Compared)
	}
	if len(sims) > 0 {
		d := distribution(sims)
		d.Histogram = histogram(sims)
		g.TextSimilarity = &d
	}
	if o := g.Observations; o.Calls > 0 {
		g.DriftShares = &Shares{Exact: *ratio(o.Exact, o.Calls), NormalizedExact: *ratio(o.NormalizedExact, o.Calls),
			Different: *ratio(o.Different, o.Calls), ExactCI: *wilson(o.Exact, o.Calls),
			NormalizedExactCI: *wilson(o.NormalizedExact, o.Calls), DifferentCI: *wilson(o.Different, o.Calls)}
	}
	g.WallMS = distribution(walls)
	return g
}

// ratio is k/n rounded to 4 decimals, so report.json diffs stay readable.
func ratio(k, n int) *float64 {
	v := round4(float64(k) / float64(n))
	return &v
}

// round4 rounds half away from zero, so a negative difference rounds as
// its positive counterpart does.
func round4(v float64) float64 {
	return math.Round(v*10000) / 10000
}

func distribution(vs []float64) Distribution {
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	median := s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Distribution{N: len(s), Min: round4(s[0]), Median: round4(median), Mean: round4(sum / float64(len(s))), Max: round4(s[len(s)-1])}
}

// histogram counts values in ten bins [0,0.1) … [0.9,1].
func histogram(vs []float64) []int {
	h := make([]int, 10)
	for _, v := range vs {
		b := int(v * 10)
		if b > 9 {
			b = 9
		}
		if b < 0 {
			b = 0
		}
		h[b]++
	}
	return h
}
