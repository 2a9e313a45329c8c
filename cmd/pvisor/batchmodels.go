package main

import (
	"fmt"
	"math"
	"regexp"
	"sync"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/batch"
)

// modelEntry is one [[models]] table of a batch file: a label and where
// its runs' model requests go.
type modelEntry struct {
	Name       string            `toml:"name"`
	Upstream   string            `toml:"upstream"`
	Model      string            `toml:"model"`
	BaseURL    string            `toml:"base_url"`
	KeyEnv     string            `toml:"key_env"`
	Headers    map[string]string `toml:"headers"`
	FakeScript string            `toml:"fake_script"`
	// Prices per million tokens (any currency; the report shows cost only
	// for runs whose model has them).
	PriceInput       *float64 `toml:"price_input"`
	PriceCachedInput *float64 `toml:"price_cached_input"`
	PriceOutput      *float64 `toml:"price_output"`
}

var modelName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

// loadModels checks the [[models]] tables, each problem with its line.
func loadModels(path string, data []byte, ms []modelEntry) ([]batch.Model, []error) {
	var out []batch.Model
	var errs []error
	lines := headerLines(data, "[[models]]")
	seen := map[string]string{}
	for i, m := range ms {
		at := fmt.Sprintf("%s:%d", path, lineAt(lines, i))
		pos := at + ": [[models]]"
		bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(pos+" "+format, args...)) }
		switch {
		case m.Name == "":
			bad("name is required: the label of the model in run ids, records and reports")
			continue
		case !modelName().MatchString(m.Name):
			bad("name %q: use letters, digits, '.', '_' and '-' (at most 64)", m.Name)
			continue
		case seen[m.Name] != "":
			bad("name %q is also the name of the model at %s", m.Name, seen[m.Name])
			continue
		}
		seen[m.Name] = at
		pos += " " + m.Name + ":"
		if m.Upstream == "fake" || m.FakeScript != "" {
			bad("a replay has no scripted upstream (resume and fork do): serve the script with 'pvisor fake-model --script FILE --addr 127.0.0.1:PORT' and set base_url to it")
			continue
		}
		if m.Upstream == "" {
			bad("upstream is required (%s, anthropic, openai-responses or openai-chat)", replay.UpstreamRecorded)
			continue
		}
		model := batch.Model{Name: m.Name, Upstream: m.Upstream, UpstreamModel: m.Model}
		if m.BaseURL != "" || m.KeyEnv != "" || len(m.Headers) > 0 {
			model.Endpoint = &replay.Endpoint{BaseURL: m.BaseURL, KeyEnv: m.KeyEnv, Headers: m.Headers}
			if err := model.Endpoint.Check(m.Upstream); err != nil {
				bad("%v", err)
				continue
			}
		}
		prices, err := m.prices()
		if err != nil {
			bad("%v", err)
			continue
		}
		model.Prices = prices
		out = append(out, model)
	}
	return out, errs
}

// prices checks the price keys: both price_input and price_output or
// none, each a finite number of at least 0.
func (m modelEntry) prices() (*batch.Prices, error) {
	if m.PriceInput == nil && m.PriceOutput == nil && m.PriceCachedInput == nil {
		return nil, nil
	}
	if m.PriceInput == nil || m.PriceOutput == nil {
		return nil, fmt.Errorf("give both price_input and price_output (per million tokens), or neither")
	}
	p := &batch.Prices{Input: *m.PriceInput, CachedInput: *m.PriceInput, Output: *m.PriceOutput}
	if m.PriceCachedInput != nil {
		p.CachedInput = *m.PriceCachedInput
	}
	for _, x := range []struct {
		name string
		v    float64
	}{{"price_input", p.Input}, {"price_cached_input", p.CachedInput}, {"price_output", p.Output}} {
		name, v := x.name, x.v
		if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v > 1e6 {
			return nil, fmt.Errorf("%s = %v: a price per million tokens, between 0 and 1000000", name, v)
		}
	}
	return p, nil
}
