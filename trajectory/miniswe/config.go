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

// runConfig is what a replay needs from the saved info.config: how mini
// ran commands and how it rendered their results.
type runConfig struct {
	format      string // FormatV1 or FormatV11
	shell       []string
	cwd         string // "" : the directory mini ran in
	env         map[string]string
	timeoutSecs int
	observation *tmpl.Template
	timeout     *tmpl.Template // v1's timeout_template; v2 renders timeouts with observation
	vars        map[string]any // the config part of the agent's template variables
}

// Environment classes whose execution the replay reproduces: the local one
// exactly (a fresh `/bin/sh -c` per command, as subprocess.run(shell=True)),
// Docker's with its interpreter run in the workspace instead of a container.
const (
	envLocal  = "minisweagent.environments.local.LocalEnvironment"
	envDocker = "minisweagent.environments.docker.DockerEnvironment"
)

// loadConfig reads the saved config of a decoded trajectory.
func loadConfig(t *trajectory.Trajectory) (*runConfig, error) {
	if t.Format == FormatBare || len(t.Config) == 0 {
		return nil, fmt.Errorf("the trajectory has no saved info.config (a bare message list): the replay renders observations with the run's own templates; pass the .traj.json mini wrote")
	}
	dec := json.NewDecoder(bytes.NewReader(t.Config))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("info.config: %w", err)
	}
	cfg, _ := tmpl.FromJSON(raw).(map[string]any)
	section := func(k string) map[string]any {
		m, _ := cfg[k].(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		return m
	}
	agent, model, env := section("agent"), section("model"), section("environment")
	c := &runConfig{format: t.Format, shell: []string{"/bin/sh", "-c"}, timeoutSecs: 30, env: map[string]string{}}
	switch et, _ := cfg["environment_type"].(string); et {
	case envLocal, "":
	case envDocker:
		c.shell = []string{"bash", "-lc"}
		if in, ok := env["interpreter"].([]any); ok && len(in) > 0 {
			c.shell = c.shell[:0]
			for _, a := range in {
				s, ok := a.(string)
				if !ok {
					return nil, fmt.Errorf("info.config.environment.interpreter holds %v, not strings", a)
				}
				c.shell = append(c.shell, s)
			}
		}
	default:
		return nil, fmt.Errorf("environment_type %s is not replayable (pvisor reproduces %s and %s)", et, envLocal, envDocker)
	}
	if cwd, ok := env["cwd"].(string); ok {
		c.cwd = cwd
	}
	if n, ok := env["timeout"].(int); ok && n > 0 {
		c.timeoutSecs = n
	}
	if e, ok := env["env"].(map[string]any); ok {
		for k, v := range e {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("info.config.environment.env.%s is not a string", k)
			}
			c.env[k] = s
		}
	}
	// The agent's template variables, later sources winning as in mini's
	// own merge (v1: agent | environment | model; v2 merges the same three
	// in that order before its counters).
	c.vars = map[string]any{}
	maps.Copy(c.vars, agent)
	maps.Copy(c.vars, env)
	maps.Copy(c.vars, model)
	var err error
	if t.Format == FormatV1 {
		if c.observation, err = savedTemplate(agent, "agent", "action_observation_template"); err != nil {
			return nil, err
		}
		if c.timeout, err = savedTemplate(agent, "agent", "timeout_template"); err != nil {
			return nil, err
		}
		return c, nil
	}
	c.observation, err = savedTemplate(model, "model", "observation_template")
	return c, err
}

func savedTemplate(section map[string]any, name, key string) (*tmpl.Template, error) {
	src, ok := section[key].(string)
	if !ok {
		return nil, fmt.Errorf("info.config.%s has no %s: the replay renders observations with the run's own template", name, key)
	}
	t, err := tmpl.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("info.config.%s.%s: %w", name, key, err)
	}
	return t, nil
}

// environ is the command's environment: mini's own (os.environ, here the
// replay's tool environment) with the config's env on top.
func (c *runConfig) environ(base []string) []string {
	out := make([]string, 0, len(base)+len(c.env))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := c.env[k]; !over {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.env)) {
		out = append(out, k+"="+c.env[k])
	}
	return out
}
