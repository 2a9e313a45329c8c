package replay

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/bridge"
)

func TestEndpointCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		e        *Endpoint
		upstream string
		want     string // "" = valid
	}{
		{"none", nil, UpstreamRecorded, ""},
		{"all", &Endpoint{BaseURL: "http://127.0.0.1:8765/v1", KeyEnv: "MODEL_A_KEY", Headers: map[string]string{"X-Tenant": "a"}}, "openai-chat", ""},
		{"agent's default protocol", &Endpoint{BaseURL: "https://api.example.com"}, "", ""},
		{"recorded", &Endpoint{BaseURL: "https://api.example.com"}, UpstreamRecorded, "go with a model upstream"},
		{"not a URL", &Endpoint{BaseURL: "api.example.com/v1"}, "anthropic", `base_url "api.example.com/v1": want an http(s) URL`},
		{"ftp", &Endpoint{BaseURL: "ftp://x/"}, "anthropic", "want an http(s) URL"},
		{"a key, not a name", &Endpoint{KeyEnv: "sk-ant-123"}, "anthropic", `key_env "sk-ant-123": want the name of an environment variable`},
		{"bad header", &Endpoint{Headers: map[string]string{"X Tenant": "a"}}, "anthropic", `"X Tenant" is not an HTTP header name`},
		{"a key in a header", &Endpoint{Headers: map[string]string{"authorization": "Bearer sk-1"}}, "openai-chat", "carries a credential"},
		{"an Anthropic key in a header", &Endpoint{Headers: map[string]string{"X-API-Key": "sk-ant-1"}}, "anthropic", "name that in key_env"},
		{"pvisor's header", &Endpoint{Headers: map[string]string{"x-litellm-session-id": "a"}}, "anthropic", "set by pvisor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.e.Check(tc.upstream)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestEndpointConfig(t *testing.T) {
	env := map[string]string{"OPENAI_BASE_URL": "https://env.example/v1", "OPENAI_API_KEY": "env-key", "MODEL_B_KEY": "b-key", "EMPTY": ""}
	getenv := func(k string) string { return env[k] }
	base := func() bridge.UpstreamConfig {
		h := http.Header{}
		h.Set(RouterSessionHeader, "run-1")
		return bridge.UpstreamConfig{Protocol: bridge.Chat, Headers: h}
	}
	for _, tc := range []struct {
		name            string
		e               *Endpoint
		url, key, extra string
		err             string
	}{
		{"environment only", nil, "https://env.example/v1", "env-key", "", ""},
		{"own URL, environment's key", &Endpoint{BaseURL: "http://127.0.0.1:9/v1"}, "http://127.0.0.1:9/v1", "env-key", "", ""},
		{"own key", &Endpoint{KeyEnv: "MODEL_B_KEY"}, "https://env.example/v1", "b-key", "", ""},
		{"own headers", &Endpoint{Headers: map[string]string{"x-tenant": "b"}}, "https://env.example/v1", "env-key", "b", ""},
		{"unset key_env", &Endpoint{KeyEnv: "NOT_SET"}, "", "", "", "key_env NOT_SET: the variable is not set"},
		{"empty key_env", &Endpoint{KeyEnv: "EMPTY"}, "", "", "", "key_env EMPTY: the variable is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			cfg, err := tc.e.Config(in, getenv)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.BaseURL != tc.url || cfg.APIKey != tc.key || cfg.Headers.Get("X-Tenant") != tc.extra || cfg.Headers.Get(RouterSessionHeader) != "run-1" {
				t.Errorf("got %s %q tenant %q session %q; want %s %q tenant %q", cfg.BaseURL, cfg.APIKey, cfg.Headers.Get("X-Tenant"),
					cfg.Headers.Get(RouterSessionHeader), tc.url, tc.key, tc.extra)
			}
			if in.Headers.Get("X-Tenant") != "" {
				t.Error("the caller's headers were changed")
			}
		})
	}
}
