package main

import (
	"io"

	"github.com/pvisor/pvisor/replay/resume"
)

const forkUsage = `Usage: pvisor fork --agent A (--session ID [--home DIR] | --bundle DIR [--home DIR])
                   --workspace DIR (--prompt TEXT | --prompt-file F) [flags]
       pvisor fork --agent A --trajectory FILE --after-step N --workspace DIR (--prompt TEXT | --prompt-file F) [flags]

Continues a captured conversation as a new one, with the agent CLI's own
fork (claude --resume --fork-session, codex exec fork, pi --fork, opencode
run --session --fork): the
same restore, bridge and capture as 'pvisor resume', and then two checks:
the child reports a session id other than the parent's, and the parent
(its bundle, or its files in --home, and the restored copy) is
byte-identical before and after, by SHA-256 (metadata.session.parent). The
child is captured into <output>/<run-id>/sessions/<agent>/<child id>/.

With --trajectory FILE --after-step N the fork branches from the middle of
a session: steps 1..N are replayed in the workspace as 'pvisor replay
--replay-only' does (the fresh observations in the agent's own format), the
rebuilt session is given a new id (every JSON string equal to the old id),
and the CLI resumes that child with the prompt. The trajectory is the
parent, checked unchanged; metadata.session.prefix describes the replay.
--prepare-only builds the prefix as 'pvisor replay --prepare-only' does,
with the recorded observations and no tool run (quality degraded).

Prints one sandbox-playback.result/v3 line (metadata.session.mode "fork").
Exit status as for 'pvisor resume'.

Agents: {resume-agents} (not with --after-step).

Examples:
    # Branch a Pi session into a second conversation in another checkout.
    $ pvisor fork --agent pi --bundle ./bundles/pi/01a22998-8d3b-75d5-8d8d-f6601805e7d0 \
        --workspace /w/try-2 --prompt 'Try it with a dict instead.'

    # Branch after step 3 of a recorded Codex run: replay the prefix here,
    # then ask for another approach.
    $ pvisor fork --agent codex --trajectory rollout.jsonl --after-step 3 \
        --workspace /w/repo --prompt 'Use a regex instead.'

    # Fork a Claude Code session straight from a sandbox's home.
    $ pvisor fork --agent claude-code --session 0a1b2c3d-9f3e-4b6a-8c1d-2e3f4a5b6c7d \
        --home /sandbox/home --workspace /w/repo --prompt-file next.md

Flags:
`

func cmdFork(args []string, stdout, stderr io.Writer) int {
	return cmdSessionRun(resume.ModeFork, forkUsage, args, stdout, stderr)
}
