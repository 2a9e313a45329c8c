package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/internal/clitest"
	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/trajectory/codex"
)

// The engine tests continue sessions with a stand-in for `codex exec resume`:
// this test binary, re-executed through a wrapper script. It does what the
// real CLI does on the wire and on disk (see trajectory/codex/launch.go) in the simplest
// way: finds the rollout by id in CODEX_HOME, sends the projected history plus
// the nonce to the provider in config.toml, appends the nonce and every model
// item to the rollout, answers function calls with "ok", and stops at the
// first response without calls. FAKE_CODEX_MODE varies it: "hang" never
// talks, "tamper" edits a stored output first, "token-name" presents the
// token variable's name instead of its value, "run" runs each call's cmd
// with bash and answers its output.
const fakeCodexEnv = "PVISOR_TEST_FAKE_CODEX"

// fakeCodexTokenEnv is the env_key the launcher's config.toml names for the
// bridge token.
const fakeCodexTokenEnv = clitest.TokenEnv

func init() {
	if os.Getenv(fakeCodexEnv) == "1" {
		os.Exit(fakeCodexMain(os.Args[1:]))
	}
}

// fakeCodexEntrypoint writes the wrapper that runs this binary as codex.
func fakeCodexEntrypoint(dir string, env ...string) (string, error) {
	return clitest.SelfAsCLI(dir, "codex", fakeCodexEnv, env...)
}

func fakeCodexMain(args []string) int {
	if len(args) > 0 && args[0] == "--version" {
		v := os.Getenv("FAKE_CODEX_VERSION")
		if v == "" {
			v = tested.RangeOf("codex").Max
		}
		if out := os.Getenv("FAKE_CODEX_VERSION_OUTPUT"); out != "" {
			fmt.Println(out)
			return 0
		}
		fmt.Println("codex-cli " + v)
		return 0
	}
	if err := fakeCodex(args, os.Getenv("FAKE_CODEX_MODE")); err != nil {
		fmt.Fprintln(os.Stderr, "fake codex:", err)
		if os.Getenv("FAKE_CODEX_EXIT_ZERO") == "1" {
			return 0 // as Pi does when the model failed
		}
		return 1
	}
	return 0
}

func fakeCodex(args []string, mode string) error {
	switch mode {
	case "hang":
		time.Sleep(time.Hour)
	case "silent":
		return nil // ends well without ever asking the model
	}
	if len(args) < 2 {
		return fmt.Errorf("want SESSION_ID NONCE, got %q", args)
	}
	sid, nonce := args[len(args)-2], args[len(args)-1]
	home := os.Getenv("CODEX_HOME")
	cfg, err := os.ReadFile(filepath.Join(home, "config.toml"))
	if err != nil {
		return err
	}
	m := clitest.BaseURL.FindSubmatch(cfg)
	if m == nil {
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
	if mode == "tamper" {
		data = bytes.Replace(data, []byte(`step-1\n"`), []byte(`step-X\n"`), 1)
	}
	proj, err := codex.Project(bytes.NewReader(data))
	if err != nil {
		return err
	}
	if err := os.WriteFile(files[0], data, 0o600); err != nil {
		return err
	}
	rollout, err := os.OpenFile(files[0], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer rollout.Close()
	// Appended record by record, as Codex does: a stopped CLI leaves
	// everything up to its last response behind.
	record := func(typ string, payload string) {
		fmt.Fprintf(rollout, `{"timestamp":"2026-11-29T12:00:00.000Z","type":%q,"payload":%s}`+"\n", typ, payload)
	}
	nonceItem := `{"type":"message","role":"user","content":[{"type":"input_text","text":"` + nonce + `"}]}`
	record("turn_context", `{"cwd":"x","model":"gpt-5.5"}`)
	record("response_item", nonceItem)
	record("event_msg", `{"type":"item_completed","item":{"type":"UserMessage","content":[{"type":"text","text":"`+nonce+`"}]}}`)
	input := []string{`{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]}`}
	for _, it := range proj.Items {
		input = append(input, string(it))
	}
	input = append(input, nonceItem)
	for turn := 0; turn < 20; turn++ {
		out, err := clitest.PostResponses(string(m[1]), input)
		if err != nil {
			return err
		}
		var calls, cmds []string
		for _, it := range gjson.GetBytes(out, "output").Array() {
			record("response_item", it.Raw)
			input = append(input, it.Raw)
			if it.Get("type").Str == "function_call" {
				calls = append(calls, it.Get("call_id").Str)
				cmds = append(cmds, gjson.Get(it.Get("arguments").Str, "cmd").Str)
			}
		}
		if len(calls) == 0 {
			return nil
		}
		for i, id := range calls {
			output := "ok"
			if mode == "run" {
				res, _ := exec.Command("bash", "-c", cmds[i]).CombinedOutput()
				output = string(res)
			}
			o, _ := json.Marshal(map[string]string{"type": "function_call_output", "call_id": id, "output": output})
			record("response_item", string(o))
			input = append(input, string(o))
		}
	}
	return fmt.Errorf("too many turns")
}
