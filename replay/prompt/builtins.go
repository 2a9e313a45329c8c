package prompt

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"time"
)

// BuiltIns are the arguments every prompt file may use and no --prompt-arg
// may override, by placeholder name.
type BuiltIns map[string]string

// Built-in argument names.
const (
	KeySessionID    = "SESSION_ID"
	KeyAgent        = "AGENT"
	KeyWorkspace    = "WORKSPACE"
	KeySourceBranch = "SOURCE_BRANCH" // the branch checked out in the workspace
	KeyTargetBranch = "TARGET_BRANCH" // the branch it would merge into
)

// reserved names stay built-in even when a run has no value for them (a
// workspace that is no git repository has no branches): an argument must
// not quietly take their place.
var reserved = map[string]bool{
	KeySessionID: true, KeyAgent: true, KeyWorkspace: true, KeySourceBranch: true, KeyTargetBranch: true,
}

// NewBuiltIns returns the built-ins of a run: the session id, the agent,
// the workspace and, when the workspace is a git repository, its branches
// as the real git reports them. Empty values are left out, so a
// placeholder that needs one fails with a message naming it.
func NewBuiltIns(ctx context.Context, sessionID, agent, workspace string) BuiltIns {
	b := BuiltIns{}
	set := func(k, v string) {
		if v != "" {
			b[k] = v
		}
	}
	set(KeySessionID, sessionID)
	set(KeyAgent, agent)
	set(KeyWorkspace, workspace)
	if workspace != "" {
		src, dst := GitBranches(ctx, workspace)
		set(KeySourceBranch, src)
		set(KeyTargetBranch, dst)
	}
	return b
}

// gitTimeout bounds each git query: a repository on a hung network file
// system must not hold the run.
const gitTimeout = 10 * time.Second

// GitBranches reports the branch checked out in dir (empty on a detached
// HEAD) and the branch it merges into: its upstream, else the remote's
// default branch (origin/HEAD), each without the remote's name. Both are
// empty when dir is no git repository or git is not installed. Only
// read-only plumbing runs, which executes no hooks.
func GitBranches(ctx context.Context, dir string) (source, target string) {
	git, err := exec.LookPath("git")
	if err != nil {
		return "", ""
	}
	query := func(args ...string) string {
		ctx, cancel := context.WithTimeout(ctx, gitTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, git, append([]string{"-C", dir}, args...)...)
		// No GIT_DIR or GIT_WORK_TREE of ours may point git elsewhere, and
		// git must never ask for anything.
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"}
		var out bytes.Buffer
		cmd.Stdout = &out
		if cmd.Run() != nil {
			return ""
		}
		return strings.TrimSpace(out.String())
	}
	source = query("symbolic-ref", "--quiet", "--short", "HEAD")
	if source != "" {
		if up := query("rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"); up != "" {
			if remote := query("config", "--get", "branch."+source+".remote"); remote != "" && remote != "." {
				up = strings.TrimPrefix(up, remote+"/")
			}
			return source, up
		}
	}
	if def := query("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"); def != "" {
		target = strings.TrimPrefix(def, "origin/")
	}
	return source, target
}
