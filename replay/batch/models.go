package batch

import (
	"github.com/pvisor/pvisor/replay"
)

// Model is one [[models]] entry: a label and the upstream settings every
// run of it gets in place of its entry's own.
type Model struct {
	Name          string // the label in run ids, records ("model") and reports
	Upstream      string // any replay --upstream value
	UpstreamModel string // --upstream-model
	Endpoint      *replay.Endpoint
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
			x.Model = m.Name
			x.Request.Upstream, x.Request.UpstreamModel, x.Request.Endpoint = m.Upstream, m.UpstreamModel, m.Endpoint
			out = append(out, x)
		}
	}
	return out
}
