package pi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/trajectory"
)

// TestModelsJSON: the bridge token is named as each Pi release reads
// models.json: a bare variable name before 0.77, "$NAME" since (a bare
// string is then the key itself, which the bridge refuses).
func TestModelsJSON(t *testing.T) {
	for version, want := range map[string]string{"0.72.1": tokenEnv, "0.73.1": tokenEnv, "0.76.9": tokenEnv,
		"0.77.0": "$" + tokenEnv, "0.83.0": "$" + tokenEnv, "1.6.0": "$" + tokenEnv, "": "$" + tokenEnv} {
		data, err := ModelsJSON("http://127.0.0.1:1", "fake", "m", version)
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

const testNonce = "__PVISOR_NATIVE_REPLAY_0123456789abcdef0123456789abcdef__"

func TestCleanSession(t *testing.T) {
	lines := []string{
		`{"type":"session","version":3,"id":"s","cwd":"/w"}`,
		`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"task"}]}}`,
		`{"type":"message","id":"b","parentId":"a","message":{"role":"toolResult","toolCallId":"c","content":[]}}`,
		`{"type":"message","id":"n","parentId":"b","message":{"role":"user","content":[{"type":"text","text":"` + testNonce + `"}]}}`,
		`{"type":"message","id":"d","parentId":"n","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}`,
	}
	data := strings.Join(lines, "\n") + "\n"
	clean, removed, err := cleanSession([]byte(data), testNonce, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{lines[0], lines[1], lines[2],
		`{"type":"message","id":"d","parentId":"b","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}`}, "\n") + "\n"
	if d := cmp.Diff(want, string(clean)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if removed[0]["entry"] != "n" || removed[0]["relinked_children"] != 1 {
		t.Errorf("removed %v", removed)
	}
	// A nonce inside the staged prefix is not the resume's.
	if _, _, err := cleanSession([]byte(data), testNonce, 4); err == nil {
		t.Error("a nonce in the prefix was removed")
	}
	stray := data + `{"type":"message","id":"e","parentId":"d","message":{"role":"assistant","content":[{"type":"text","text":"` + testNonce + `"}]}}` + "\n"
	if _, _, err := cleanSession([]byte(stray), testNonce, 3); err == nil {
		t.Error("a stray nonce was kept")
	}
}

func TestUsedTools(t *testing.T) {
	c := &launch.Continuation{Trajectory: &trajectory.Trajectory{Actions: []trajectory.Action{
		{Calls: []trajectory.ToolCall{{Name: "ls"}, {Name: "find"}}}, {Calls: []trajectory.ToolCall{{Name: "custom_x"}}}}}}
	if got := usedTools(c); !cmp.Equal(got, []string{"read", "bash", "edit", "write", "find", "ls"}) {
		t.Errorf("usedTools = %v", got)
	}
}
