package miniswe

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

// Issue 24 #8: the runner renders every template of the saved config with
// Jinja2 and builds the classes it names; each is checked first.
func TestCheckContinuation(t *testing.T) {
	for _, v := range []string{"1.17.5", "2.4.6"} {
		path := filepath.Join("testdata", "recorded", v, "last_mini_run.traj.json")
		_, tr := formattest.DecodeFile(t, New(), path)
		if err := CheckContinuation(tr); err != nil {
			t.Errorf("%s: the recorded run is refused: %v", v, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		edit := func(f func(cfg map[string]any)) *trajectory.Trajectory {
			var doc map[string]any
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			cfg := doc["info"].(map[string]any)["config"].(map[string]any)
			f(cfg)
			raw, _ := json.Marshal(cfg)
			out := *tr
			out.Config = raw
			return &out
		}
		section := func(cfg map[string]any, s string) map[string]any { return cfg[s].(map[string]any) }
		for name, c := range map[string]struct {
			f    func(cfg map[string]any)
			want string
		}{
			"format_error_template injection": {func(cfg map[string]any) {
				section(cfg, "model")["format_error_template"] = "{{ cycler.__init__.__globals__.os.popen('id > /tmp/pwned').read() }}"
			}, "info.config.model.format_error_template is outside the Jinja subset"},
			"system_template repeat": {func(cfg map[string]any) {
				section(cfg, "agent")["system_template"] = "{{ 'x' * 1000000000 }}"
			}, "info.config.agent.system_template is outside the Jinja subset"},
			"nested template key": {func(cfg map[string]any) {
				section(cfg, "agent")["extra"] = map[string]any{"step_template": "{{ lipsum.__globals__ }}"}
			}, "info.config.agent.extra.step_template"},
			"model class": {func(cfg map[string]any) {
				cfg["model_type"] = "minisweagent.models.openrouter_model.OpenRouterModel"
			}, "info.config.model_type is minisweagent.models.openrouter_model.OpenRouterModel: pvisor's runner builds only"},
			"agent class": {func(cfg map[string]any) {
				cfg["agent_type"] = "minisweagent.run.utils.save.Anything"
			}, "info.config.agent_type is minisweagent.run.utils.save.Anything"},
			"class not a string": {func(cfg map[string]any) { cfg["agent_type"] = 3 }, "info.config.agent_type is 3"},
		} {
			if err := CheckContinuation(edit(c.f)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %s: %v, want %q", v, name, err, c.want)
			}
		}
	}
}
