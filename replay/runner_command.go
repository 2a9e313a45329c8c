package replay

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// runnerCommand is how a Python runner (mini-swe-agent's, OpenHands') is
// launched: the bridge's address goes into its request file (never onto the
// command line, with the rest of the request), the script in the staged
// home runs with that request, the home and its XDG dirs are the staged
// ones, litellm's cost-map download and telemetry are off, and the bridge
// token travels only in OPENAI_API_KEY, which no saved file holds. agentEnv
// is what the agent itself needs to start quietly.
func runnerCommand(c *Continuation, request, script string, b BridgeAddr, agentEnv ...string) (Command, error) {
	data, err := os.ReadFile(request)
	if err != nil {
		return Command{}, err
	}
	var req map[string]any
	if err := json.Unmarshal(data, &req); err != nil {
		return Command{}, err
	}
	req["api_base"] = b.URL + "/v1"
	if data, err = json.Marshal(req); err != nil {
		return Command{}, err
	}
	if err := os.WriteFile(request, data, 0o600); err != nil {
		return Command{}, err
	}
	home := c.Home
	env := append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache")}, agentEnv...)
	env = append(env, "LITELLM_LOCAL_MODEL_COST_MAP=True", "LITELLM_TELEMETRY=False", "NO_COLOR=1", "TERM=dumb",
		"OPENAI_API_KEY="+b.Token)
	args := append([]string{filepath.Join(home, script), request}, c.AgentArgs...)
	return Command{Args: args, Env: env}, nil
}
