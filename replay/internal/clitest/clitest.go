// Package clitest holds what the engine's and resume's tests share to run
// a stand-in agent CLI: the test binary itself, re-executed through a
// wrapper script (its init then plays the CLI), the way such a stand-in
// talks to the bridge, and the small recorded Codex rollout they continue.
// Only tests import it.
package clitest

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TokenEnv is the variable the launchers' configurations name for the
// bridge token.
const TokenEnv = "PVISOR_BRIDGE_TOKEN"

// BaseURL finds the bridge's base_url in a Codex config.toml.
var BaseURL = regexp.MustCompile(`(?m)^base_url = "([^"]+)"$`)

// SelfAsCLI writes dir/name, a wrapper that runs this test binary with
// marker=1 (its init then plays the CLI) and env.
func SelfAsCLI(dir, name, marker string, env ...string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	// GORACE: a -race binary otherwise sleeps a second before it exits.
	script := "#!/bin/sh\nexport " + marker + "=1 GORACE=atexit_sleep_ms=0 " + strings.Join(env, " ") +
		"\nexec " + self + ` "$@"` + "\n"
	return path, os.WriteFile(path, []byte(script), 0o755)
}

// PostResponses sends input to the Responses endpoint under base as the
// stand-in CLIs do (not streamed, one exec_command tool) and returns the
// answer's body. FAKE_CODEX_MODE=token-name presents the token variable's
// name instead of its value.
func PostResponses(base string, input []string) ([]byte, error) {
	body := `{"model":"gpt-5.5","stream":false,"tools":[{"type":"function","name":"exec_command"}],"input":[` + strings.Join(input, ",") + `]}`
	req, _ := http.NewRequest(http.MethodPost, base+"/responses", strings.NewReader(body))
	token := os.Getenv(TokenEnv)
	if os.Getenv("FAKE_CODEX_MODE") == "token-name" {
		token = TokenEnv // what Pi ≥ 0.83 sent when given the variable's name
	}
	req.Header.Set("Authorization", "Bearer "+token)
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

// SynthRollout copies the small Codex rollout codex's own staging tests
// use (recorded in /rec/ws: three one-call steps, then a final answer)
// from stage, that package's testdata/stage, into dir.
func SynthRollout(t testing.TB, stage, dir string) string {
	t.Helper()
	if err := os.CopyFS(dir, os.DirFS(stage)); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "rollout-2026-11-29T10-00-00-01a20000-0000-7000-8000-000000000001.jsonl")
}

// EmptyHome points HOME at a new empty directory for the rest of the test
// binary and returns its cleanup: the agents' login shells and the replayed
// tools' `bash -lc` then read no developer login files. Root's ~/.bashrc on
// the CI image runs `pyenv rehash`, and two of those at once race on
// pyenv's shims directory ("pyenv: cannot rehash … isn't writable" in a
// replayed observation) or leave its lock behind. The recordings were made
// with an empty HOME as well.
func EmptyHome() (func(), error) {
	home, err := os.MkdirTemp("", "pvisor-test-home-")
	if err != nil {
		return nil, err
	}
	os.Setenv("HOME", home)
	return func() { os.RemoveAll(home) }, nil
}
