package batch

import (
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay"
)

func TestModelsCrossEveryEntry(t *testing.T) {
	_, plain := codexSpec(t, replay.PrepareOnly, Steps{List: []int{1, 3}}, 2)
	fast := Model{Name: "fast", Upstream: "openai-responses", UpstreamModel: "gpt-5.5-mini",
		Endpoint: &replay.Endpoint{BaseURL: "http://127.0.0.1:9/v1", KeyEnv: "FAST_KEY"}}
	careful := Model{Name: "careful", Upstream: "openai-responses", UpstreamModel: "gpt-5.5"}
	for _, tc := range []struct {
		name   string
		models []Model
		want   int
		errs   []string
	}{
		{"none", nil, 4, nil},
		{"two", []Model{fast, careful}, 8, nil},
		// Two names with the same settings are two arms of the study (an A/A
		// control): the name is part of the run id.
		{"one twice", []Model{careful, {Name: "careful2", Upstream: careful.Upstream, UpstreamModel: careful.UpstreamModel}}, 8, nil},
		{"a bad upstream", []Model{{Name: "x", Upstream: "openai-foo"}}, 0, []string{"study.toml:1: [[runs]] × model x: --upstream: unknown model protocol \"openai-foo\""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, _ := codexSpec(t, replay.PrepareOnly, Steps{List: []int{1, 3}}, 2)
			spec.Models = tc.models
			runs, errs := Expand(spec)
			if len(errs) != len(tc.errs) {
				t.Fatalf("errors %v, want %v", errs, tc.errs)
			}
			for i, w := range tc.errs {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %q, want %q", errs[i], w)
				}
			}
			if len(runs) != tc.want {
				t.Fatalf("%d runs, want %d", len(runs), tc.want)
			}
			ids := map[string]bool{}
			for i, r := range runs {
				ids[r.ID] = true
				if len(tc.models) == 0 {
					if r.ID != plain[i].ID || r.Model != "" {
						t.Errorf("without models run %d is %s (model %q), want %s as before", i, r.ID, r.Model, plain[i].ID)
					}
					continue
				}
				m := tc.models[i/4] // entry-major: one model's runs, then the next's
				if r.Model != m.Name || r.req.Upstream != m.Upstream || r.req.UpstreamModel != m.UpstreamModel || r.req.Endpoint != m.Endpoint ||
					!strings.Contains(r.ID, "-"+m.Name+"-s") {
					t.Errorf("run %d %s: model %q upstream %q/%q endpoint %v; want %+v", i, r.ID, r.Model, r.req.Upstream, r.req.UpstreamModel, r.req.Endpoint, m)
				}
			}
			if len(ids) != len(runs) {
				t.Errorf("%d distinct ids for %d runs", len(ids), len(runs))
			}
		})
	}
}

func TestCheckKeys(t *testing.T) {
	run := func(id, model, keyEnv string, mode replay.Mode) *Run {
		r := &Run{ID: id, Model: model}
		r.req.Mode = mode
		if keyEnv != "" {
			r.req.Endpoint = &replay.Endpoint{KeyEnv: keyEnv}
		}
		return r
	}
	env := map[string]string{"SET_KEY": "k", "EMPTY_KEY": ""}
	for _, tc := range []struct {
		name string
		runs []*Run
		want []string
	}{
		{"set", []*Run{run("a", "m", "SET_KEY", replay.Continue)}, nil},
		{"no key_env", []*Run{run("a", "m", "", replay.Continue)}, nil},
		{"unset, once for two runs", []*Run{run("a", "m", "NOPE", replay.Continue), run("b", "m", "NOPE", replay.Continue)},
			[]string{"model m: key_env NOPE is not set (or empty) in this environment (first run a)"}},
		{"empty", []*Run{run("a", "m", "EMPTY_KEY", replay.Continue)}, []string{"key_env EMPTY_KEY is not set"}},
		{"no model request", []*Run{run("a", "m", "NOPE", replay.ReplayOnly), run("b", "m", "NOPE", replay.PrepareOnly)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := CheckKeys(tc.runs, func(k string) string { return env[k] })
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %v, want %v", errs, tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %q, want %q", errs[i], w)
				}
			}
		})
	}
}
