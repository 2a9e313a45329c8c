package replay

import (
	"context"
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/replay/prompt"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/run/egress"
)

// Flag names of the boundary prompt, for the prompt package's messages.
const (
	flagBoundaryPrompt     = "--boundary-user-prompt"
	flagBoundaryPromptFile = "--boundary-user-prompt-file"
)

// promptSource is the boundary prompt as the prompt package sees it.
func (r *Request) promptSource() prompt.Source {
	return prompt.Source{Text: r.BoundaryUserPrompt, File: r.BoundaryUserPromptFile, Args: r.PromptArgs,
		TextFlag: flagBoundaryPrompt, FileFlag: flagBoundaryPromptFile}
}

// checkBoundaryPrompt validates the prompt options without reading the file.
func (r *Request) checkBoundaryPrompt() error {
	src := r.promptSource()
	if !src.Given() {
		if len(r.PromptArgs) > 0 {
			return configErr("--prompt-arg fills {{KEY}} placeholders of %s, which is not given", flagBoundaryPromptFile)
		}
		return nil
	}
	if err := src.Check(); err != nil {
		return configErr("%v", err)
	}
	return nil
}

// CheckPromptFile loads the boundary prompt file with a stand-in for every
// built-in, for checks before any run starts (a batch): the file must be
// readable and every other placeholder must have a --prompt-arg. Nothing
// runs.
func (r *Request) CheckPromptFile() error {
	if r.BoundaryUserPromptFile == "" {
		return nil
	}
	b := prompt.BuiltIns{}
	for _, k := range prompt.Names() {
		b[k] = k
	}
	if _, err := prompt.Load(r.promptSource(), b); err != nil {
		return configErr("%v", err)
	}
	return nil
}

// promptRequested reports whether the run has a boundary prompt, inline
// or from a file.
func (r *run) promptRequested() bool {
	return r.req.BoundaryUserPrompt != "" || r.req.BoundaryUserPromptFile != ""
}

// loadBoundaryPrompt reads --boundary-user-prompt-file and fills its
// placeholders before anything runs, so a missing value is a flag error
// (exit 2) that costs nothing. Built-ins: the trajectory's session id, the
// agent, the workspace and its git branches. A file without !`command`
// is the final prompt at once; one with commands waits for
// expandBoundaryPrompt.
func (r *run) loadBoundaryPrompt(ctx context.Context) error {
	if r.req.BoundaryUserPromptFile == "" {
		return nil
	}
	ws, err := filepath.Abs(orDefault(r.req.Workspace, "."))
	if err != nil {
		return configErr("workspace: %v", err)
	}
	b := prompt.NewBuiltIns(ctx, r.plan.Trajectory.SessionID, r.plan.Format.Agent(), ws)
	tpl, err := prompt.Load(r.req.promptSource(), b)
	if err != nil {
		return configErr("%v", err)
	}
	r.promptTpl = tpl
	m := r.res.Metadata["boundary_user_prompt"].(map[string]any)
	m["source"] = "file"
	if abs, err := filepath.Abs(r.req.BoundaryUserPromptFile); err == nil {
		m["file"] = abs
	}
	if w := tpl.Warnings(); len(w) > 0 {
		m["warnings"] = w
		for _, s := range w {
			r.warn(s)
		}
	}
	if text, ok := tpl.Text(); ok {
		r.setBoundaryPrompt(text)
	} else {
		m["expanded"] = false
	}
	return nil
}

// expandBoundaryPrompt runs the prompt file's commands in the workspace,
// as replayed tools run (same isolation and environment), once the prefix
// is replayed and before the agent starts. A failing command fails the run
// as an executor error (exit 30): it ran in the workspace and did not
// work, like a replayed tool that cannot run.
func (r *run) expandBoundaryPrompt(ctx context.Context) error {
	if r.promptTpl == nil || r.req.BoundaryUserPrompt != "" {
		return nil
	}
	ws, err := r.workspace()
	if err != nil {
		return err
	}
	iso, err := r.toolIsolation(ws)
	if err != nil {
		return err
	}
	r.toolsEnv().SetCall(egress.Call{Label: "boundary_user_prompt"})
	exec, err := prompt.NewExecutor(prompt.ExecOptions{Env: r.toolsEnv().Vars(), Isolation: iso, TempDir: r.stateDir})
	if err != nil {
		return fail(result.ExecutorError, "%s: %v", flagBoundaryPromptFile, err)
	}
	defer exec.Close()
	res, err := r.promptTpl.Expand(ctx, ws, exec)
	m := r.res.Metadata["boundary_user_prompt"].(map[string]any)
	m["expansions"] = res.Expansions
	if err != nil {
		return fail(result.ExecutorError, "%s: %v", flagBoundaryPromptFile, err)
	}
	m["expanded"] = true
	r.setBoundaryPrompt(res.Text)
	return nil
}

// setBoundaryPrompt makes text the boundary prompt; the result gets its
// length and SHA-256, never the text.
func (r *run) setBoundaryPrompt(text string) {
	r.req.BoundaryUserPrompt = text
	promptDigest(r.res.Metadata["boundary_user_prompt"].(map[string]any), text)
}

func promptDigest(m map[string]any, p string) {
	if p == "" {
		return
	}
	m["sha256"], m["length"] = prompt.Digest(p)
}

// warn prints a warning where progress goes, unless progress is off
// (--quiet): the warnings are in the result's metadata either way.
func (r *run) warn(msg string) {
	if r.req.Progress == ProgressOff {
		return
	}
	to := r.req.ProgressTo
	if to == nil {
		to = os.Stderr
	}
	_, _ = to.Write([]byte("pvisor replay: warning: " + msg + "\n"))
}
