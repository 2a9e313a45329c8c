package resume

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/replay/prompt"
	"github.com/pvisor/pvisor/replay/toolenv"
	"github.com/pvisor/pvisor/result"
	toolrun "github.com/pvisor/pvisor/run"
)

// checkOptions checks the prompt and output options without reading
// anything.
func (r *sessionRun) checkOptions() error {
	req := r.req
	if err := req.Prompt.Check(); err != nil {
		return configErr("%v", err)
	}
	if !req.Prompt.Given() {
		return configErr("a prompt is required: --prompt TEXT or --prompt-file FILE")
	}
	if _, err := prompt.NewWatcher(req.Completion, nil); err != nil {
		return configErr("%v", err)
	}
	if req.MaxRetries < 0 {
		return configErr("--max-retries %d: use 0 or more", req.MaxRetries)
	}
	if req.OutputTag == "" {
		if req.OutputSchema != "" || req.MaxRetries > 0 {
			return configErr("--output-schema and --max-retries go with --output-tag")
		}
		return nil
	}
	if err := prompt.CheckTag(req.OutputTag); err != nil {
		return configErr("--output-tag: %v", err)
	}
	return nil
}

// loadPrompt reads and fills the prompt and reads the output schema;
// nothing runs and nothing is written yet.
func (r *sessionRun) loadPrompt(ctx context.Context, ws, sessionID string) error {
	req := r.req
	tmpl, err := prompt.Load(req.Prompt, prompt.NewBuiltIns(ctx, sessionID, r.store.Agent(), ws))
	if err != nil {
		return configErr("%v", err)
	}
	r.tmpl = tmpl
	for _, w := range tmpl.Warnings() {
		r.warn(w)
	}
	if req.OutputSchema != "" {
		data, err := toolrun.ReadUserFile("--output-schema", req.OutputSchema, prompt.MaxFileBytes, "a schema file", "pass a JSON Schema file")
		if err != nil {
			return configErr("%v", err)
		}
		if r.schema, err = prompt.CompileSchema(data); err != nil {
			return configErr("--output-schema %s: %v", req.OutputSchema, err)
		}
	}
	return nil
}

// expandPrompt runs the prompt file's !`command` expressions in the
// workspace, isolated as replayed tools are; any failure stops the run
// before the agent starts.
func (r *sessionRun) expandPrompt(ctx context.Context, ws string) (string, error) {
	meta := map[string]any{}
	r.res.Metadata["prompt"] = meta
	text, ok := r.tmpl.Text()
	if !ok {
		iso := toolrun.Isolation{Enabled: os.Geteuid() == 0, DataLimit: toolenv.DefaultToolDataLimit}
		if iso.Enabled && iso.Probe() != nil {
			iso = toolrun.Isolation{}
		}
		exec, err := prompt.NewExecutor(prompt.ExecOptions{Env: append(r.baseEnv(), "HOME="+ws), Isolation: iso,
			TempDir: filepath.Join(r.stateDir)})
		if err != nil {
			return "", fail(result.ExecutorError, "prompt commands: %v", err)
		}
		defer exec.Close()
		res, err := r.tmpl.Expand(ctx, ws, exec)
		if err != nil {
			return "", fail(result.ExecutorError, "%v (the agent was not started)", err)
		}
		text = res.Text
		meta["expansions"] = res.Expansions
	}
	for k, v := range PromptMetadata(text) {
		meta[k] = v
	}
	return text, nil
}

// attempts launches the CLI, then, while the structured output is
// unusable and retries are left, resumes the same session with what was
// wrong. It returns the id of the session the first launch continued.
func (r *sessionRun) attempts(ctx context.Context, entry string, in launchInput, at attempt) (string, error) {
	var childID string
	var problems []string
	for {
		id, out, err := r.launch(ctx, entry, in, at)
		if err != nil {
			return "", err
		}
		switch {
		case at.n == 0:
			childID = id
		case id != childID:
			return "", fail(result.ContinuationError, "retry %d continued session %s, not %s", at.n, id, childID)
		}
		if r.req.OutputTag == "" {
			return childID, nil
		}
		content, oerr := r.structured(out)
		meta := map[string]any{"tag": r.req.OutputTag, "attempts": at.n + 1, "problems": problems, "valid": oerr == nil}
		r.res.Metadata["structured_output"] = meta
		if len(r.retries) > 0 {
			meta["retries"] = r.retries
		}
		if oerr == nil {
			meta["content"] = content
			return childID, nil
		}
		problems = append(problems, oerr.Error())
		meta["problems"] = problems
		if at.n >= r.req.MaxRetries {
			return "", fail(result.ContinuationError, "structured output: %v (after %d attempt(s); --max-retries %d)", oerr, at.n+1, r.req.MaxRetries)
		}
		at = attempt{n: at.n + 1, mode: ModeResume, sid: childID, text: prompt.RetryMessage(oerr)}
	}
}

// structured is the tag's content from the agent's text: JSON (checked
// against the schema) when a schema is given, else the text itself.
func (r *sessionRun) structured(text string) (any, error) {
	content, err := prompt.Extract(text, r.req.OutputTag)
	if err != nil {
		return nil, err
	}
	if r.schema == nil {
		return content, nil
	}
	if err := r.schema.Validate([]byte(content)); err != nil {
		var oe *prompt.OutputError
		if !errors.As(err, &oe) {
			return nil, fmt.Errorf("<%s>: %w", r.req.OutputTag, err)
		}
		return nil, prompt.WithTag(err, r.req.OutputTag)
	}
	return json.RawMessage(content), nil
}
