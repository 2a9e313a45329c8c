// Command pvisor replays an AI coding agent's native session in a fresh
// sandbox and lets the real agent continue from any step.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/pvisor/pvisor/overlay"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/batch"
	"github.com/pvisor/pvisor/replay/doctor"
)

const usage = `pvisor replays AI coding agents' native sessions.

Usage:
    pvisor inspect FILE [--agent A] [--json]
    pvisor replay --agent A --trajectory FILE --after-step N [--prepare-only | --replay-only] [flags]
    pvisor replay --config FILE
    pvisor doctor [--agent A] [--agent-entrypoint PATH] [--json]
    pvisor batch run FILE.toml [--jobs N] [--shard I/N] [--dry-run]
    pvisor batch report DIR... [--out DIR]
    pvisor batch emit slurm|k8s FILE.toml
    pvisor session locate|show --agent A [--home DIR] ID
    pvisor session rewrite --agent A --from OLD --to NEW < IN > OUT
    pvisor capture --agent A --session ID [--home DIR] [--store DIR]
    pvisor resume|fork --agent A (--session ID [--home DIR] | --bundle DIR) --workspace DIR --prompt TEXT
    pvisor fake-model --script FILE [--addr 127.0.0.1:PORT]
    pvisor version (or --version, -V)

Agents: {agents}.

Examples:
    # List the steps of a session, to choose --after-step.
    $ pvisor inspect ~/.claude/projects/-work-repo/0a1b2c3d.jsonl

    # Check the agent CLIs installed here (say, after a new release).
    $ pvisor doctor

    # Validate and plan a replay after step 3 without running anything.
    $ pvisor replay --prepare-only --agent codex --trajectory rollout.jsonl --after-step 3

    # Store a session from a sandbox's home as a portable bundle.
    $ pvisor capture --agent codex --session 01a22998-569d-74b2-aebf-25f39bc1a17a --home /sandbox/home

    # Continue that session in this checkout, through the bridge.
    $ pvisor resume --agent codex --bundle ~/.local/share/pvisor/sessions/codex/01a22998-569d-74b2-aebf-25f39bc1a17a \
        --workspace . --prompt 'Now add tests.'

Run 'pvisor COMMAND --help' for the flags of a command.
`

func main() { os.Exit(pvisorMain()) }

func pvisorMain() int {
	if overlay.IsChild() {
		// A re-executed copy of pvisor inside an overlay's namespaces.
		overlay.ChildMain(func() int { return run(os.Args[1:], os.Stdout, os.Stderr) })
	}
	return run(os.Args[1:], os.Stdout, os.Stderr)
}

// run is main without the process: tests drive it directly.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, withAgents(usage))
		return 2
	}
	switch args[0] {
	case "inspect":
		return cmdInspect(args[1:], stdout, stderr)
	case "replay":
		return cmdReplay(args[1:], stdout, stderr)
	case "batch":
		return cmdBatch(args[1:], stdout, stderr)
	case batch.ChildCommand:
		return cmdBatchChild(stdout, stderr)
	case "session":
		return cmdSession(args[1:], stdout, stderr)
	case "capture":
		return cmdCapture(args[1:], stdout, stderr)
	case "resume":
		return cmdResume(args[1:], stdout, stderr)
	case "fork":
		return cmdFork(args[1:], stdout, stderr)
	case "fake-model":
		return cmdFakeModel(args[1:], stdout, stderr)
	case "doctor":
		return cmdDoctor(args[1:], stdout, stderr)
	case doctor.NetnsCommand:
		return cmdNetns(args[1:], stdout, stderr)
	case replay.ChildCommand:
		return cmdReplayChild(stdout, stderr)
	case "version", "--version", "-V":
		fmt.Fprintln(stdout, "pvisor", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, withAgents(usage))
		return 0
	default:
		fmt.Fprintf(stderr, "pvisor: unknown command %q\n\n%s", args[0], withAgents(usage))
		return 2
	}
}

// version is stamped at build time (make build: -ldflags "-X main.version=…",
// from the VERSION file and git describe); "dev" only for a plain go build.
var version = "dev"
