package batch

import (
	"fmt"

	"github.com/pvisor/pvisor/replay"
)

// Model is one [[models]] entry: a label and the upstream settings every
// run of it gets in place of its entry's own.
type Model struct {
	Name          string // the label in run ids, records ("model") and reports
	Upstream      string // any replay --upstream value
	UpstreamModel string // --upstream-model
	Endpoint      *replay.Endpoint
	// Prices, when the study gives them, turn token usage into a cost.
	Prices *Prices
}

// Prices are a model's prices per million tokens, in whatever currency the
// study writes them in. Cached input defaults to the input price.
type Prices struct {
	Input       float64 `json:"input_per_mtok"`
	CachedInput float64 `json:"cached_input_per_mtok"`
	Output      float64 `json:"output_per_mtok"`
}

// Cost is what the tokens cost at p.
func (p Prices) Cost(input, cached, output int64) float64 {
	return (float64(input-cached)*p.Input + float64(cached)*p.CachedInput + float64(output)*p.Output) / 1e6
}

// crossModels returns the entries once per model, each with the model's
// upstream settings, in entry-major order (entry 1 × every model, then
// entry 2 …); without models, the entries as they are.
func crossModels(spec *Spec) []Entry {
	if len(spec.Models) == 0 {
		return spec.Entries
	}
	var out []Entry
	for _, e := range spec.Entries {
		for _, m := range spec.Models {
			x := e
			x.Model, x.Prices = m.Name, m.Prices
			x.Request.Upstream, x.Request.UpstreamModel, x.Request.Endpoint = m.Upstream, m.UpstreamModel, m.Endpoint
			out = append(out, x)
		}
	}
	return out
}

// CheckKeys checks that the variable every run's key_env names is set
// (and not empty) here, so a study does not replay prefix after prefix
// only to fail at each first model request. Each variable is reported
// once.
func CheckKeys(runs []*Run, getenv func(string) string) []error {
	var errs []error
	seen := map[string]bool{}
	for _, r := range runs {
		e := r.req.Endpoint
		if e == nil || e.KeyEnv == "" || seen[e.KeyEnv] || r.req.Mode != replay.Continue {
			continue
		}
		seen[e.KeyEnv] = true
		if getenv(e.KeyEnv) == "" {
			errs = append(errs, fmt.Errorf("model %s: key_env %s is not set (or empty) in this environment (first run %s)", r.Model, e.KeyEnv, r.ID))
		}
	}
	return errs
}
