package replay

import (
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"sync"

	"github.com/pvisor/pvisor/bridge"
)

// Endpoint is a model service of its own for one run, over the provider
// variables of the environment (OPENAI_BASE_URL, ANTHROPIC_API_KEY, …):
// what lets the runs of one batch each reach another model. The key is
// never part of it, only the name of the variable that holds it, so a
// request (which travels to batch children and overlay workers) never
// carries a secret.
type Endpoint struct {
	// BaseURL follows the provider SDK's convention (bridge.UpstreamConfig).
	BaseURL string `json:",omitempty"`
	// KeyEnv names the environment variable holding the API key.
	KeyEnv string `json:",omitempty"`
	// Headers are set on every forwarded request (a router's tenant, say).
	Headers map[string]string `json:",omitempty"`
}

var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// headerName is an HTTP token (RFC 9110).
var headerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$") })

// Check validates e for a run whose upstream is upstream; nil is fine.
func (e *Endpoint) Check(upstream string) error {
	if e == nil {
		return nil
	}
	if upstream == UpstreamRecorded {
		return configErr("base_url, key_env and headers go with a model upstream (%s, %s, %s or the agent's default), not %s",
			bridge.Anthropic, bridge.Responses, bridge.Chat, UpstreamRecorded)
	}
	if e.BaseURL != "" {
		u, err := url.Parse(e.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return configErr("base_url %q: want an http(s) URL such as https://api.example.com/v1", e.BaseURL)
		}
	}
	if e.KeyEnv != "" && !envName().MatchString(e.KeyEnv) {
		return configErr("key_env %q: want the name of an environment variable (the key itself is never written in a file)", e.KeyEnv)
	}
	for _, k := range sortedKeys(e.Headers) {
		if !headerName().MatchString(k) {
			return configErr("headers: %q is not an HTTP header name", k)
		}
		switch http.CanonicalHeaderKey(k) {
		case http.CanonicalHeaderKey(RouterSessionHeader):
			return configErr("headers: %s is set by pvisor (the run's session id)", k)
		case "Authorization", "X-Api-Key", "Api-Key", "Proxy-Authorization":
			return configErr("headers: %s carries a credential, which a file must not hold: put it in an environment variable and name that in key_env", k)
		}
	}
	return nil
}

// Config fills cfg from e, then from the provider variables: e wins. A
// key_env that is unset or empty is an error rather than a fall back to
// the provider's own variable, which would send the run to another
// account without a word.
func (e *Endpoint) Config(cfg bridge.UpstreamConfig, getenv func(string) string) (bridge.UpstreamConfig, error) {
	if e != nil {
		cfg.BaseURL = e.BaseURL
		if e.KeyEnv != "" {
			if cfg.APIKey = getenv(e.KeyEnv); cfg.APIKey == "" {
				return cfg, configErr("key_env %s: the variable is not set (or empty) in pvisor's environment", e.KeyEnv)
			}
		}
		if len(e.Headers) > 0 {
			h := cfg.Headers.Clone()
			if h == nil {
				h = http.Header{}
			}
			for k, v := range e.Headers {
				h.Set(k, v)
			}
			cfg.Headers = h
		}
	}
	return cfg.FillFromEnv(getenv), nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
