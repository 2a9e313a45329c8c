package replay

import (
	"encoding/json"
	"testing"
)

// TestPiModelsJSON: the bridge token is named as each Pi release reads
// models.json: a bare variable name before 0.77, "$NAME" since (a bare
// string is then the key itself, which the bridge refuses).
func TestPiModelsJSON(t *testing.T) {
	for version, want := range map[string]string{"0.72.1": piTokenEnv, "0.73.1": piTokenEnv, "0.76.9": piTokenEnv,
		"0.77.0": "$" + piTokenEnv, "0.83.0": "$" + piTokenEnv, "1.6.0": "$" + piTokenEnv, "": "$" + piTokenEnv} {
		data, err := piModelsJSON("http://127.0.0.1:1", "fake", "m", version)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Providers map[string]struct {
				BaseURL string `json:"baseUrl"`
				APIKey  string `json:"apiKey"`
			} `json:"providers"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		if p := m.Providers["fake"]; p.APIKey != want || p.BaseURL != "http://127.0.0.1:1/v1" {
			t.Errorf("pi %q: %+v, want apiKey %q", version, p, want)
		}
	}
}
