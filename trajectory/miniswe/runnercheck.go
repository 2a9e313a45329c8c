package miniswe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/miniswe/tmpl"
)

// The classes pvisor's runner builds from a saved config: mini's
// LiteLLM models (the only ones that talk to the bridge's Chat Completions
// endpoint; another would reach its own service, or none), its default and
// interactive agents (the runner puts them in yolo mode), and the
// environments the replay reproduces. Any other class named in the
// trajectory, a minisweagent one included, is refused before anything
// runs: the runner must not import and build what a trajectory names
// (issue 24 #8).
var runnerClasses = map[string][]string{
	"model_type": {"minisweagent.models.litellm_model.LitellmModel",
		"minisweagent.models.litellm_textbased_model.LitellmTextbasedModel"},
	"agent_type":       {"minisweagent.agents.default.DefaultAgent", "minisweagent.agents.interactive.InteractiveAgent"},
	"environment_type": {envLocal, envDocker},
}

// CheckContinuation checks what the runner will build and render from the
// trajectory's saved config, before anything runs: each class is one the
// runner knows, and every template mini renders (any string under a key
// holding "template", in agent, model and environment, at any depth) is in
// the Jinja subset pvisor renders itself — no attribute calls into Python,
// nothing that only fails when rendered. Mini renders them with Jinja2,
// which would evaluate anything else.
func CheckContinuation(t *trajectory.Trajectory) error {
	if len(t.Config) == 0 {
		return fmt.Errorf("the trajectory has no saved info.config")
	}
	dec := json.NewDecoder(bytes.NewReader(t.Config))
	dec.UseNumber()
	var cfg map[string]any
	if err := dec.Decode(&cfg); err != nil {
		return fmt.Errorf("info.config: %w", err)
	}
	for _, key := range slices.Sorted(maps.Keys(runnerClasses)) {
		v, present := cfg[key]
		if !present {
			continue // the runner's default is in the list
		}
		name, _ := v.(string)
		if !slices.Contains(runnerClasses[key], name) {
			return fmt.Errorf("info.config.%s is %v: pvisor's runner builds only %s", key, v, strings.Join(runnerClasses[key], " or "))
		}
	}
	for _, section := range []string{"agent", "model", "environment"} {
		if err := checkTemplates("info.config."+section, cfg[section]); err != nil {
			return err
		}
	}
	return nil
}

func checkTemplates(path string, v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p := path + "." + k
		switch x := m[k].(type) {
		case map[string]any:
			if err := checkTemplates(p, x); err != nil {
				return err
			}
		case string:
			if !strings.Contains(k, "template") {
				continue
			}
			if _, err := tmpl.Parse(x); err != nil {
				return fmt.Errorf("%s is outside the Jinja subset pvisor accepts (%v); mini would render it with Jinja2 in the runner", p, err)
			}
		}
	}
	return nil
}
