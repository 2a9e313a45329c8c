package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"strings"

	"github.com/spf13/pflag"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/prompt"
	"github.com/pvisor/pvisor/replay/resume"
	"github.com/pvisor/pvisor/result"
)

const resumeUsage = `Usage: pvisor resume --agent A (--session ID [--home DIR] | --bundle DIR [--home DIR])
                     --workspace DIR (--prompt TEXT | --prompt-file F) [flags]

Continues a captured conversation in this sandbox with the agent CLI's own
resume (claude --resume, codex exec resume, pi --session, opencode run
--session), its model
requests going through pvisor's loopback bridge to --upstream. The session
comes from a bundle ('pvisor capture') or, by id, from the agent's state
under --home. It is restored into an isolated home in the state dir (or,
with --bundle, into --home: anything already there is moved to
.pvisor-recovery/ in the agent's state directory first, and the result says where), with the
recorded cwd rewritten to the workspace's realpath and the file placed
where the CLI looks for it from there. After the run the session is
captured again into <output>/<run-id>/sessions/. The session must keep its
id, and the session it came from is checked unchanged. OpenCode keeps its
sessions in SQLite: its database is copied from --home into the state dir
and the session exported from the copy ('opencode export'); a restore is
'opencode import' of that document, and the capture after the run another
export.

The prompt is --prompt TEXT or --prompt-file FILE. A file's {{KEY}}
placeholders take --prompt-arg KEY=VALUE values and the built-ins
{{SESSION_ID}}, {{AGENT}}, {{WORKSPACE}}, {{SOURCE_BRANCH}} and
{{TARGET_BRANCH}} (when the workspace is a git repository), which no
--prompt-arg overrides; then each !` + "`command`" + ` in the file runs in the
workspace, all at once, and is replaced by what it prints. A command that
fails stops the run before the agent starts.

The agent is done when its text holds a completion signal
(<promise>COMPLETE</promise> unless --completion-signal is given, several
allowed); a CLI still running --completion-timeout after its last output
past the signal is stopped, and the run counts as completed with a
warning. Before a signal, --idle-timeout fails a silent agent.

--output-tag TAG puts the content of the agent's last <TAG>…</TAG> in
metadata.structured_output: the text, or with --output-schema FILE the JSON
value, checked against that schema. When it is missing or unusable, --max-retries K resumes the same
session up to K times with a short description of what was wrong.

Prints one sandbox-playback.result/v3 line (metadata.session.mode
"resume"); the prompt's text is never stored, only its length and SHA-256.
Exit status: 0 ok, 2 a bad flag, id or bundle, 10 no session or several
with that id, 11 an agent or CLI version without resume support, 20 the
workspace or directories, 30 a prompt command failed, 40 the agent or the
model failed (or the structured output stayed unusable).

Agents: {resume-agents}.

Examples:
    # Ask for a JSON summary, retrying once when the tag is malformed.
    $ pvisor resume --agent pi --bundle ./bundles/pi/01a22998-8d3b-75d5-8d8d-f6601805e7d0 \
        --workspace /w/repo --prompt-file review.md --prompt-arg ISSUE=42 \
        --output-tag result --output-schema result.schema.json --max-retries 1

    # Resume a Codex session from a sandbox's home in this checkout, with a
    # scripted fake model (no model service needed).
    $ pvisor resume --agent codex --session 01a22998-569d-74b2-aebf-25f39bc1a17a \
        --home /sandbox/home --workspace . --prompt 'Now add tests.' \
        --upstream fake --fake-script script.json

    # Resume a captured Claude Code session against the Anthropic API
    # (ANTHROPIC_API_KEY is read by pvisor and never reaches the CLI).
    $ pvisor resume --agent claude-code --bundle ./bundles/claude-code/0a1b2c3d-9f3e-4b6a-8c1d-2e3f4a5b6c7d \
        --workspace /w/repo --prompt-file next.md

Flags:
`

func cmdResume(args []string, stdout, stderr io.Writer) int {
	return cmdSessionRun(resume.ModeResume, resumeUsage, args, stdout, stderr)
}

// cmdSessionRun is resume and fork: the same flags, another mode.
func cmdSessionRun(mode, usage string, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet(mode, pflag.ContinueOnError)
	req := &resume.SessionRequest{Mode: mode}
	var home string
	var promptArgs, signals []string
	fs.StringVar(&req.Agent, "agent", "", "agent whose session it is ("+strings.Join(resume.ResumeAgents(), ", ")+")")
	fs.StringVar(&req.SessionID, "session", "", "session id, as the agent CLI printed it")
	fs.StringVar(&home, "home", "", "with --session: the HOME the agent ran under; with --bundle: the HOME to restore into")
	fs.StringVar(&req.Bundle, "bundle", "", "bundle `dir` from pvisor capture")
	fs.StringVar(&req.Workspace, "workspace", "", "directory the agent resumes in")
	fs.StringVar(&req.Prompt.Text, "prompt", "", "the message to continue with")
	fs.StringVar(&req.Prompt.File, "prompt-file", "", "read the message from this `file` ({{KEY}} placeholders, !`command` expansions)")
	fs.StringArrayVar(&promptArgs, "prompt-arg", nil, "KEY=VALUE for a {{KEY}} placeholder of --prompt-file (repeatable)")
	fs.StringArrayVar(&signals, "completion-signal", nil, "text that says the agent is done (repeatable; default "+prompt.DefaultSignal+")")
	fs.DurationVar(&req.Completion.Timeout, "completion-timeout", prompt.DefaultCompletionTimeout, "after the signal, stop an agent silent for this long, as done")
	fs.StringVar(&req.OutputTag, "output-tag", "", "put the content of the agent's last <`TAG`>…</TAG> in the result")
	fs.StringVar(&req.OutputSchema, "output-schema", "", "JSON Schema `file` the --output-tag content must match")
	fs.IntVar(&req.MaxRetries, "max-retries", 0, "resume the session up to `K` times when the structured output is unusable")
	fs.StringVar(&req.Upstream, "upstream", "", "model upstream: anthropic, openai-responses, openai-chat, or fake (default: the agent's protocol)")
	fs.StringVar(&req.UpstreamModel, "upstream-model", "", "model an openai-chat server serves (Claude Code on Chat Completions)")
	fs.StringVar(&req.FakeScript, "fake-script", "", "reply script `file` for --upstream fake")
	fs.StringVar(&req.AgentEntrypoint, "agent-entrypoint", "", "agent CLI `path` (default: on PATH)")
	fs.StringArrayVar(&req.AgentArgs, "agent-arg", nil, "native argument added to the CLI (repeatable)")
	fs.BoolVar(&req.AllowUntestedVersion, "allow-untested-version", false, "run a CLI outside the tested range (quality degraded)")
	fs.DurationVar(&req.IdleTimeout, "idle-timeout", replay.DefaultIdleTimeout, "stop an agent silent for this long")
	upstreamTimeoutVars(fs, &req.UpstreamFirstByteTimeout, &req.UpstreamIdleTimeout)
	fs.StringVar(&req.RunID, "run-id", "", "run id (default: generated)")
	fs.StringVar(&req.StateRoot, "state-dir", replay.DefaultStateRoot, "state root")
	fs.StringVar(&req.OutputRoot, "output-dir", replay.DefaultOutputRoot, "output root")
	quiet := fs.BoolP("quiet", "q", false, "no progress lines on stderr")
	if mode == resume.ModeFork {
		fs.StringVar(&req.Trajectory, "trajectory", "", "with --after-step: the native session `file` to fork from the middle of")
		fs.IntVar(&req.AfterStep, "after-step", 0, "fork after step `N` of --trajectory: steps 1..N replayed in the workspace, rebuilt under a new id")
		fs.BoolVar(&req.PrepareOnly, "prepare-only", false, "with --after-step: keep the recorded observations instead of re-running the prefix's tools (quality degraded)")
	}
	failEarly := func(format string, a ...any) int {
		res := result.New(req.RunID, req.Agent)
		res.Fail(result.ConfigurationError, fmt.Sprintf(format, a...))
		res.MarkEarly()
		res.Metadata["session"] = map[string]any{"mode": mode}
		stdout.Write(res.Line())
		fmt.Fprintf(stderr, "pvisor %s: %s\n", mode, res.Failure.Message)
		return result.ExitCode(res.Failure)
	}
	if err := parseFlags(fs, usage, args, stdout); err != nil {
		if err == pflag.ErrHelp {
			return 0
		}
		return failEarly("%v", err)
	}
	switch {
	case fs.NArg() != 0:
		return failEarly("unexpected arguments %q (the session id goes in --session)", fs.Args())
	case req.Agent == "":
		return failEarly("--agent is required")
	}
	if err := checkUpstreamTimeouts(fs); err != nil {
		return failEarly("%v", err)
	}
	var err error
	if req.Prompt.Args, err = prompt.ParseArgs(promptArgs); err != nil {
		return failEarly("--prompt-arg: %v", err)
	}
	req.Completion.Signals = signals
	if !*quiet {
		req.Progress = stderr
	}
	if req.Bundle != "" {
		req.TargetHome = home
	} else {
		req.SourceHome = home
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	res := resume.RunSession(ctx, req)
	stop()
	stdout.Write(res.Line())
	if ws, ok := res.Metadata["warnings"].([]string); ok {
		for _, w := range ws {
			fmt.Fprintf(stderr, "pvisor %s: warning: %s\n", mode, w)
		}
	}
	if res.Failure != nil {
		fmt.Fprintf(stderr, "pvisor %s: %s: %s\n", mode, res.Failure.Category, res.Failure.Message)
	}
	return result.ExitCode(res.Failure)
}
