package opencode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/launch"
)

// OpenCode keeps its sessions in SQLite: a restore imports the export
// document (Bundled) into the isolated home's database, the CLI resumes or
// forks it there (`opencode run --session <id> [--fork]`), and the session
// is exported again afterwards for the capture.
var resume = launch.Resume{
	Command:   resumeCommand,
	SessionID: launch.StreamID("type", "step_start", "sessionID"),
	Text:      outputText,
	Collect:   collectSession,
	Export:    exportSession,
	Stop:      syscall.SIGINT,
	Grace:     stopGrace,
}

// resumeCommand imports the restored export and resumes it with the
// prompt, the bridge as the session's provider.
func resumeCommand(c launch.ResumeCall) (launch.ResumeCommand, error) {
	doc, err := os.ReadFile(c.Main)
	if err != nil {
		return launch.ResumeCommand{}, err
	}
	provider, model := sessionModel(doc)
	if provider == "" || model == "" {
		return launch.ResumeCommand{}, fmt.Errorf("the export names no provider and model (messages[].info.providerID/modelID or info.model)")
	}
	cfg, err := json.MarshalIndent(bridgeConfig(provider, model, c.Bridge.URL), "", "  ")
	if err != nil {
		return launch.ResumeCommand{}, err
	}
	config := filepath.Join(c.Home, ".config", "opencode", "opencode.json")
	if err := launch.WriteConfig(config, cfg, c.Backup); err != nil {
		return launch.ResumeCommand{}, err
	}
	env := append(append([]string(nil), c.Env...), cliEnv(c.Home, "")...)
	staging := map[string]any{"method": "direct"}
	if err := stageDB(c.StateRoot, c.Entry, env, c.Home, c.Cwd, doc); err != nil {
		// A home given with --home may hold a database already: the CLI
		// adds the session to it.
		staging = map[string]any{"method": "import", "reason": err.Error()}
		out, errOut, err := runTool(c.Entry, env, c.Cwd, "import", c.Main)
		if err != nil {
			return launch.ResumeCommand{}, err
		}
		if all := append(out, errOut...); !bytes.Contains(all, []byte(c.SID)) {
			return launch.ResumeCommand{}, fmt.Errorf("opencode import did not report session %s: %s", c.SID, clipOut(all))
		}
	}
	args := []string{"run", "--format", "json", "--session", c.SID}
	if c.Fork {
		args = append(args, "--fork")
	}
	args = append(append(args, "--model", provider+"/"+model), c.Args...)
	args = append(args, c.Prompt)
	return launch.ResumeCommand{Command: launch.Command{Args: args, Env: cliEnv(c.Home, c.Bridge.Token)},
		Meta: map[string]any{"opencode_provider": provider, "opencode_model": model, "opencode_staging": staging}, Configs: []string{config}}, nil
}

// outputText: the text parts of --format json.
func outputText(line []byte) string {
	if gjson.GetBytes(line, "type").Str != "text" {
		return ""
	}
	return gjson.GetBytes(line, "part.text").Str
}

// collectSession exports session id from the home's database to where
// Bundled keeps it.
func collectSession(c launch.ResumeCall, id string) error {
	_, err := exportSession(c, c.Root, id)
	return err
}

// exportSession writes session id of the database in dataDir (the home's,
// or a copy pvisor made) to where Bundled keeps it in dataDir, as `opencode
// export` prints it: read by pvisor (read), or by the CLI when pvisor
// cannot read that database (then c.Meta's opencode_collecting says why).
func exportSession(c launch.ResumeCall, dataDir, id string) (read bool, err error) {
	out := filepath.Join(dataDir, ExportDir, id+".json")
	doc, err := readDB(dataDir, id)
	if tooLarge(err) {
		return false, err
	}
	how := map[string]any{"method": "direct"}
	if err != nil {
		how = map[string]any{"method": "export", "reason": err.Error()}
	}
	if c.Meta != nil {
		c.Meta["opencode_collecting"] = how
	}
	if err == nil {
		return true, writeExportFile(out, doc)
	}
	home := filepath.Dir(filepath.Dir(filepath.Dir(dataDir))) // <home>/.local/share/opencode
	return false, exportWithCLI(c, cliEnv(home, ""), id, out)
}

func writeExportFile(out string, doc []byte) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return err
	}
	return os.WriteFile(out, doc, 0o600)
}

// exportWithCLI runs `opencode export id` and writes the document it
// printed to out.
func exportWithCLI(c launch.ResumeCall, env []string, id, out string) error {
	stdout, _, err := runTool(c.Entry, append(append([]string(nil), c.Env...), env...), c.Cwd, "export", id)
	if err != nil {
		return err
	}
	i := bytes.IndexByte(stdout, '{')
	if i < 0 || !gjson.ValidBytes(stdout[i:]) {
		return fmt.Errorf("opencode export %s printed no JSON document: %s", id, clipOut(stdout))
	}
	doc := stdout[i:]
	if got := gjson.GetBytes(doc, "info.id").Str; got != id {
		return fmt.Errorf("opencode export printed session %q, not %s", got, id)
	}
	return writeExportFile(out, doc)
}
