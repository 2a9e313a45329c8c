package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/capture"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/result"
	toolrun "github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory/opencode"
	ocstore "github.com/pvisor/pvisor/trajectory/opencode/store"
	"github.com/pvisor/pvisor/trajectory/session"
)

// OpenCode keeps its sessions in SQLite: a restore imports the export
// document (opencode.Bundled) into the isolated home's database, the CLI
// resumes or forks it there (`opencode run --session <id> [--fork]`), and
// the session is exported again afterwards for the capture.

// opencodeResume imports the restored export and resumes it with the
// prompt, the bridge as the session's provider.
func opencodeResume(c resumeCall) (resumeCommand, error) {
	doc, err := os.ReadFile(c.Main)
	if err != nil {
		return resumeCommand{}, err
	}
	provider, model := opencodeModel(doc)
	if provider == "" || model == "" {
		return resumeCommand{}, fmt.Errorf("the export names no provider and model (messages[].info.providerID/modelID or info.model)")
	}
	cfg, err := json.MarshalIndent(opencodeConfig(provider, model, c.Bridge.URL), "", "  ")
	if err != nil {
		return resumeCommand{}, err
	}
	config := filepath.Join(c.Home, ".config", "opencode", "opencode.json")
	if err := launch.WriteConfig(config, cfg, c.Backup); err != nil {
		return resumeCommand{}, err
	}
	env := append(append([]string(nil), c.Env...), opencodeEnv(c.Home, "")...)
	staging := map[string]any{"method": "direct"}
	if err := opencodeStage(c.StateRoot, c.Entry, env, c.Home, c.Cwd, doc); err != nil {
		// A home given with --home may hold a database already: the CLI
		// adds the session to it.
		staging = map[string]any{"method": "import", "reason": err.Error()}
		out, errOut, err := opencodeTool(c.Entry, env, c.Cwd, "import", c.Main)
		if err != nil {
			return resumeCommand{}, err
		}
		if all := append(out, errOut...); !bytes.Contains(all, []byte(c.SID)) {
			return resumeCommand{}, fmt.Errorf("opencode import did not report session %s: %s", c.SID, clipOut(all))
		}
	}
	args := []string{"run", "--format", "json", "--session", c.SID}
	if c.Fork {
		args = append(args, "--fork")
	}
	args = append(append(args, "--model", provider+"/"+model), c.Args...)
	args = append(args, c.Prompt)
	return resumeCommand{Command: Command{Args: args, Env: opencodeEnv(c.Home, c.Bridge.Token)},
		Meta: map[string]any{"opencode_provider": provider, "opencode_model": model, "opencode_staging": staging}, Configs: []string{config}}, nil
}

// opencodeText: the text parts of --format json.
func opencodeText(line []byte) string {
	if gjson.GetBytes(line, "type").Str != "text" {
		return ""
	}
	return gjson.GetBytes(line, "part.text").Str
}

// opencodeCollect exports session id from the home's database to where
// opencode.Bundled keeps it.
func opencodeCollect(c resumeCall, id string) error {
	return opencodeExport(c, c.Root, id, filepath.Join(c.Root, opencode.ExportDir, id+".json"))
}

// opencodeExport writes session id of the database in dataDir (the
// home's, or a copy pvisor made) to out as `opencode export` prints it:
// read by pvisor, or by the CLI when pvisor cannot read that database
// (then c.Meta's opencode_collecting says why).
func opencodeExport(c resumeCall, dataDir, id, out string) error {
	doc, err := opencodeRead(dataDir, id)
	if opencodeTooLarge(err) {
		return err
	}
	how := map[string]any{"method": "direct"}
	if err != nil {
		how = map[string]any{"method": "export", "reason": err.Error()}
	}
	if c.Meta != nil {
		c.Meta["opencode_collecting"] = how
	}
	if err == nil {
		return writeExport(out, doc)
	}
	home := filepath.Dir(filepath.Dir(filepath.Dir(dataDir))) // <home>/.local/share/opencode
	return opencodeExportTo(c, opencodeEnv(home, ""), id, out)
}

func writeExport(out string, doc []byte) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return err
	}
	return os.WriteFile(out, doc, 0o600)
}

func opencodeExportTo(c resumeCall, env []string, id, out string) error {
	stdout, _, err := opencodeTool(c.Entry, append(append([]string(nil), c.Env...), env...), c.Cwd, "export", id)
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
	return writeExport(out, doc)
}

// locateInDatabase finds session id in the session table of a CLI's data
// directory by its primary key, without writing there (nothing may be
// written before the run has its directories; store.OpenSnapshot). A
// database of a schema pvisor does not read falls back to finding the id's
// bytes in the files, which the export then confirms (it must return that
// id). The main file is the database; the others are sidecars, hashed with
// it to show the parent unchanged.
func locateInDatabase(agent, root, id string) (*session.Located, error) {
	if err := session.CheckID(id); err != nil {
		return nil, err
	}
	loc := &session.Located{Agent: agent, ID: id, Root: root}
	for _, name := range opencode.DatabaseFiles {
		if _, err := os.Lstat(filepath.Join(root, name)); err != nil {
			continue
		}
		if loc.Main == "" {
			loc.Main = name
		} else {
			loc.Sidecars = append(loc.Sidecars, name)
		}
	}
	notFound := &session.NotFoundError{Agent: agent, ID: id, Root: root, Pattern: "session with that id in " + opencode.DatabaseFiles[0]}
	if loc.Main != opencode.DatabaseFiles[0] {
		return nil, notFound
	}
	found, err := findSession(root, id)
	var schema *ocstore.SchemaError
	if errors.As(err, &schema) {
		found, err = false, nil
		for _, name := range append([]string{loc.Main}, loc.Sidecars...) {
			ok, ferr := fileContains(filepath.Join(root, name), []byte(id))
			if ferr != nil {
				return nil, ferr
			}
			found = found || ok
		}
	}
	if err != nil {
		return nil, fail(result.TrajectoryError, "%s: %v; is it the database of an OpenCode the tested releases know?", filepath.Join(root, loc.Main), err)
	}
	if !found {
		return nil, notFound
	}
	return loc, nil
}

// findSession looks id up in the database of dataDir.
func findSession(dataDir, id string) (bool, error) {
	db, done, err := ocstore.OpenSnapshot(dataDir, "")
	if err != nil {
		return false, err
	}
	defer done()
	defer db.Close()
	_, ok, err := db.Find(id)
	return ok, err
}

// fileContains streams path for needle.
func fileContains(path string, needle []byte) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	var window []byte // the tail of the last read, then this one
	for {
		n, err := f.Read(chunk)
		window = append(window, chunk[:n]...)
		if bytes.Contains(window, needle) {
			return true, nil
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		// Keep what could start the needle across the next read.
		if keep := len(needle) - 1; len(window) > keep {
			window = append(window[:0], window[len(window)-keep:]...)
		}
	}
}

// exportSource copies the source database into the state dir and exports
// the session from the copy: the CLI writes to a database it opens, and
// the source home is not the run's to write.
func (r *sessionRun) exportSource(src *source, entry, ws string) (string, error) {
	via := &capture.Via{Method: "export", Tool: r.launcher().Binary(), Version: deref(r.res.Agent.Version)}
	c := resumeCall{Entry: entry, Env: r.baseEnv(), Cwd: ws}
	bundle, _, err := exportBundle(r.store, r.spec, src.located, c, filepath.Join(r.stateDir, "source-home"), filepath.Join(r.stateDir, "source"), via)
	return bundle, err
}

// exportBundle copies the database files of loc into the data directory
// of the new home work, exports the session from the copy with the CLI
// (c.Entry) and captures the export into the bundle store storeDir.
func exportBundle(store session.Store, spec resumeSpec, loc *session.Located, c resumeCall, work, storeDir string, via *capture.Via) (string, *capture.Manifest, error) {
	data, err := store.Root(work, os.Getenv)
	if err != nil {
		return "", nil, fail(result.InternalError, "%v", err)
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return "", nil, fail(result.WorkspaceError, "%v", err)
	}
	for _, rel := range append([]string{loc.Main}, loc.Sidecars...) {
		if err := toolrun.CopyRegularFile(filepath.Join(loc.Root, rel), filepath.Join(data, rel)); err != nil {
			return "", nil, fail(result.WorkspaceError, "copying the source database: %v", err)
		}
	}
	if c.Meta == nil {
		c.Meta = map[string]any{}
	}
	if err := spec.Export(c, data, loc.ID, filepath.Join(data, opencode.ExportDir, loc.ID+".json")); err != nil {
		return "", nil, fail(result.TrajectoryError, "exporting %s session %s: %v", store.Agent(), loc.ID, err)
	}
	if how, _ := c.Meta["opencode_collecting"].(map[string]any); how["method"] == "direct" && via != nil {
		// pvisor read the rows itself: the export document is the one the
		// CLI would print, made without running it.
		v := *via
		v.Method = "database-read"
		via = &v
	}
	return capture.Capture(capture.Options{Store: store, Root: data, ID: loc.ID, StoreDir: storeDir, Via: via})
}
