// Package pyrunner launches the Python programs pvisor continues some
// agents with (a runner that drives the agent's own classes, run with the
// python of the agent's venv): the parts every such agent shares.
package pyrunner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pvisor/pvisor/replay/launch"
)

// Command is how a Python runner (mini-swe-agent's, OpenHands') is
// launched: the bridge's address goes into its request file (never onto the
// command line, with the rest of the request), the script in the staged
// home runs with that request, the home and its XDG dirs are the staged
// ones, litellm's cost-map download and telemetry are off, and the bridge
// token travels only in OPENAI_API_KEY, which no saved file holds. agentEnv
// is what the agent itself needs to start quietly.
func Command(c *launch.Continuation, request, script string, b launch.BridgeAddr, agentEnv ...string) (launch.Command, error) {
	data, err := os.ReadFile(request)
	if err != nil {
		return launch.Command{}, err
	}
	var req map[string]any
	if err := json.Unmarshal(data, &req); err != nil {
		return launch.Command{}, err
	}
	req["api_base"] = b.URL + "/v1"
	if data, err = json.Marshal(req); err != nil {
		return launch.Command{}, err
	}
	if err := os.WriteFile(request, data, 0o600); err != nil {
		return launch.Command{}, err
	}
	home := c.Home
	env := append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache")}, agentEnv...)
	env = append(env, "LITELLM_LOCAL_MODEL_COST_MAP=True", "LITELLM_TELEMETRY=False", "NO_COLOR=1", "TERM=dumb",
		"OPENAI_API_KEY="+b.Token)
	args := append([]string{filepath.Join(home, script), request}, c.AgentArgs...)
	return launch.Command{Args: args, Env: env}, nil
}

// VenvPython is the interpreter the `mini` script runs with: its shebang
// (pip writes the venv's python there), else python next to it.
func VenvPython(entry string) (string, error) {
	real, err := filepath.EvalSymlinks(entry)
	if err != nil {
		return "", err
	}
	f, err := os.Open(real)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	if py, ok := strings.CutPrefix(strings.TrimSpace(line), "#!"); ok && filepath.IsAbs(py) && !strings.ContainsAny(py, " \t") {
		if st, err := os.Stat(py); err == nil && !st.IsDir() {
			return py, nil
		}
	}
	py := filepath.Join(filepath.Dir(real), "python")
	if _, err := os.Stat(py); err != nil {
		return "", fmt.Errorf("%s is not a script of a Python venv (no python next to it)", entry)
	}
	return py, nil
}
