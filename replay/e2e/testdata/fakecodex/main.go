// Command fakecodex is a stand-in Codex CLI for tests that must continue a
// session where no real CLI is installed: the study test in cmd/pvisor and
// the Slurm e2e build it and point agent_entrypoint at it. It is test data
// (agent knowledge stays in trajectory/codex and the launchers).
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/trajectory/codex"
)

// fakeCodex stands in for `codex exec resume`. It does what the
// real CLI does that a study measures: finds the staged rollout in
// CODEX_HOME, sends the history plus the nonce to the provider in
// config.toml through the bridge, appends every model item to the rollout,
// and runs each exec_command call in its working directory (the run's
// workspace), answering with the command's output, until the model
// answers without calls.
func main() { os.Exit(fakeCodex(os.Args[1:], os.Stdout, os.Stderr)) }

func fakeCodex(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "--version" {
		fmt.Fprintln(stdout, "codex-cli "+tested.RangeOf("codex").Max)
		return 0
	}
	if err := codexRun(args); err != nil {
		fmt.Fprintln(stderr, "fake codex:", err)
		return 1
	}
	return 0
}

var baseURL = regexp.MustCompile(`(?m)^base_url = "([^"]+)"$`)

func codexRun(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("want … SESSION_ID NONCE, got %q", args)
	}
	sid, nonce := args[len(args)-2], args[len(args)-1]
	home := os.Getenv("CODEX_HOME")
	cfg, err := os.ReadFile(filepath.Join(home, "config.toml"))
	if err != nil {
		return err
	}
	base := baseURL.FindSubmatch(cfg)
	if base == nil {
		return fmt.Errorf("no base_url in config.toml")
	}
	files, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+sid+".jsonl"))
	if len(files) != 1 {
		return fmt.Errorf("session %s not found: %v", sid, files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return err
	}
	proj, err := codex.Project(bytes.NewReader(data))
	if err != nil {
		return err
	}
	rollout, err := os.OpenFile(files[0], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer rollout.Close()
	record := func(typ, payload string) {
		fmt.Fprintf(rollout, `{"timestamp":"2026-12-02T12:00:00.000Z","type":%q,"payload":%s}`+"\n", typ, payload)
	}
	nonceItem := `{"type":"message","role":"user","content":[{"type":"input_text","text":"` + nonce + `"}]}`
	record("turn_context", `{"cwd":"x","model":"gpt-5.5"}`)
	record("response_item", nonceItem)
	input := []string{`{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]}`}
	for _, it := range proj.Items {
		input = append(input, string(it))
	}
	input = append(input, nonceItem)
	for range 10 {
		out, err := postResponses(string(base[1]), input)
		if err != nil {
			return err
		}
		calls := 0
		for _, it := range gjson.GetBytes(out, "output").Array() {
			record("response_item", it.Raw)
			input = append(input, it.Raw)
			if it.Get("type").Str != "function_call" {
				continue
			}
			calls++
			cmd := gjson.Get(it.Get("arguments").Str, "cmd").Str
			res, _ := exec.Command("bash", "-c", cmd).CombinedOutput()
			o, _ := json.Marshal(map[string]string{"type": "function_call_output", "call_id": it.Get("call_id").Str, "output": string(res)})
			record("response_item", string(o))
			input = append(input, string(o))
		}
		if calls == 0 {
			return nil
		}
	}
	return fmt.Errorf("too many turns")
}

// postResponses posts input to the Responses endpoint under base, not
// streamed, offering one exec_command tool.
func postResponses(base string, input []string) ([]byte, error) {
	body := `{"model":"gpt-5.5","stream":false,"tools":[{"type":"function","name":"exec_command"}],"input":[` + strings.Join(input, ",") + `]}`
	req, _ := http.NewRequest(http.MethodPost, base+"/responses", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+os.Getenv("PVISOR_BRIDGE_TOKEN"))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("model answered %d: %s", res.StatusCode, out)
	}
	return out, nil
}
