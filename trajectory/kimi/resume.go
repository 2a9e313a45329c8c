package kimi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/launch"
)

// resume: `kimi -S <id> -p P --output-format stream-json` against the
// bridge, the model and the bridge token given by KIMI_MODEL_*. A fork is
// Kimi's own `kimi fork <id> -y` first (it copies the session under a new
// id in the same workspace directory and leaves the parent's files
// byte-identical: measured), then the resume of the id it prints.
var resume = launch.Resume{
	Command:   resumeCommand,
	SessionID: launch.StreamID("type", "session.resume_hint", "session_id"),
	Text:      outputText,
	Fork:      forkCommand,
	ForkID:    forkID,
}

// kimiEnv is what every kimi run gets: its home, no telemetry, no update
// check.
func kimiEnv(root string) []string {
	return []string{"KIMI_CODE_HOME=" + root, "KIMI_DISABLE_TELEMETRY=1", "KIMI_CODE_NO_AUTO_UPDATE=1"}
}

func forkCommand(c launch.ResumeCall) (launch.Command, error) {
	return launch.Command{Args: []string{"fork", c.SID, "-y"}, Env: kimiEnv(c.Root)}, nil
}

// forkedRe is the line `kimi fork` prints: Forked to session_<uuid> ("…") in 621ms.
var forkedRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^Forked to (session_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b`)
})

func forkID(stdout []byte) (string, error) {
	m := forkedRe().FindSubmatch(stdout)
	if m == nil {
		return "", errors.New(`kimi fork printed no "Forked to session_<uuid>" line`)
	}
	return string(m[1]), nil
}

func resumeCommand(c launch.ResumeCall) (launch.ResumeCommand, error) {
	if c.Fork {
		return launch.ResumeCommand{}, errors.New("a kimi fork runs `kimi fork` first; this launch only resumes")
	}
	loc, err := Sessions().Locate(c.Root, c.SID)
	if err != nil {
		return launch.ResumeCommand{}, err
	}
	wire := filepath.Join(c.Root, loc.Main)
	dir := filepath.Dir(filepath.Dir(filepath.Dir(wire)))
	model := ""
	if err := launch.ScanLines(wire, func(line []byte) {
		if model == "" && gjson.GetBytes(line, "type").Str == "llm.request" {
			model = gjson.GetBytes(line, "model").Str
		}
	}); err != nil {
		return launch.ResumeCommand{}, err
	}
	if model == "" {
		model = "kimi-model" // a session cut before its first model call
	}
	state, err := pointState(filepath.Join(dir, "state.json"), c.SID, c.Cwd, dir)
	if err != nil {
		return launch.ResumeCommand{}, err
	}
	meta := map[string]any{"kimi_model": model, "rewritten": append([]string{
		"session directory sessions/" + filepath.Base(filepath.Dir(dir)) + " (wd_<slug>_<sha256(cwd)[:12]> of the workspace)",
		"wire.jsonl runtime.set_binding.workspaceId",
		"wire.jsonl profile.bind systemPrompt and environmentDisclosure.cwd",
		"wire.jsonl tool.call display cwd and paths"}, state...)}
	env := append(kimiEnv(c.Root), "KIMI_MODEL_NAME="+model, "KIMI_MODEL_PROVIDER_TYPE=openai",
		"KIMI_MODEL_BASE_URL="+c.Bridge.URL+"/v1", "KIMI_MODEL_API_KEY="+c.Bridge.Token)
	args := append([]string{}, c.Args...)
	args = append(args, "-S", c.SID, "-p", c.Prompt, "--output-format", "stream-json")
	return launch.ResumeCommand{Command: launch.Command{Args: args, Env: env}, Meta: meta}, nil
}

// pointState sets state.json's cwd and each agent's homedir
// (<dir>/agents/<name>) for the restored directory, writing a state.json
// when the session has none (a bundle of the wire log alone); it says
// what it changed. Kimi resets homedir itself on resume (measured), but a
// state.json naming another home is not left behind.
func pointState(path, id, cwd, dir string) ([]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		data, _ = json.Marshal(map[string]any{"id": id, "version": 2, "cwd": cwd, "archived": false,
			"agents": map[string]any{"main": map[string]any{"homedir": filepath.Join(dir, "agents", "main"), "type": "main"}},
			"custom": map[string]any{}, "lastTurnReason": "completed", "isCustomTitle": false})
		return []string{"state.json written"}, os.WriteFile(path, data, 0o600)
	}
	if err != nil {
		return nil, err
	}
	if !gjson.ValidBytes(data) || !gjson.GetBytes(data, "agents").IsObject() {
		return nil, fmt.Errorf("%s is not a Kimi session state (no agents object)", path)
	}
	var changed []string
	if gjson.GetBytes(data, "cwd").Str != cwd {
		data = launch.SetString(data, "cwd", cwd)
		changed = append(changed, "state.json cwd")
	}
	var names []string
	gjson.GetBytes(data, "agents").ForEach(func(k, _ gjson.Result) bool {
		names = append(names, k.Str)
		return true
	})
	sort.Strings(names)
	for _, name := range names {
		if !agentNameRe().MatchString(name) {
			return nil, fmt.Errorf("%s: agent name %q is not a plain name", path, name)
		}
		want := filepath.Join(dir, "agents", name)
		key := "agents." + name + ".homedir"
		if gjson.GetBytes(data, key).Str != want {
			data = launch.SetString(data, key, want)
			changed = append(changed, "state.json "+key)
		}
	}
	if len(changed) == 0 {
		return nil, nil
	}
	return changed, os.WriteFile(path, bytes.TrimRight(data, "\n"), 0o600)
}

// agentNameRe is a name a homedir may be built from.
var agentNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// outputText: the assistant text of --output-format stream-json.
func outputText(line []byte) string {
	if gjson.GetBytes(line, "role").Str != "assistant" {
		return ""
	}
	c := gjson.GetBytes(line, "content")
	if c.Type == gjson.String {
		return c.Str
	}
	return launch.TextBlocks(c)
}
