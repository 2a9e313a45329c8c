package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/pvisor/pvisor/replay/doctor"
	"github.com/pvisor/pvisor/replay/releases"
	"github.com/pvisor/pvisor/replay/tested"
)

const doctorUsage = `Usage: pvisor doctor [--agent A]... [--agent-entrypoint PATH] [--json] [--keep]
       pvisor doctor --releases [--json]

Checks the agent CLIs installed here against pvisor: for each agent found on
PATH (or given), it probes the version, then replays a small bundled session
recorded by a tested release and continues it with this CLI through the
bridge with the recorded upstream, in a loopback-only network namespace (when
run as root). No model service is needed and nothing leaves the machine.
It is the one command to run when a new CLI release lands.

With --releases it checks nothing here: it asks npm and PyPI (with their own
clients) for the newest release of every package pvisor tests
(replay/tested/versions.txt) and of the packages its agents moved to, and
prints how far the tested releases are behind, and which package stopped
while its agent goes on elsewhere. It is informational: exit 0 even when a
lookup fails (the row says why).

Exit status: 0 when every check passed; otherwise the exit code of the
first failed check (11: not a supported agent or none found, 40: the
continuation or its resume envelope could not be verified).

Examples:
    # Every agent CLI on PATH.
    $ pvisor doctor

    # This morning's Claude Code, installed somewhere else; JSON for CI.
    $ pvisor doctor --agent claude-code --agent-entrypoint ~/.npm-global/bin/claude --json

    # Which tested CLIs have newer releases, or moved to another package.
    $ pvisor doctor --releases

Flags:
`

func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("doctor", pflag.ContinueOnError)
	agentsFlag := fs.StringArray("agent", nil, "check only this `agent` (repeatable): "+strings.Join(doctor.Agents(), ", "))
	entry := fs.String("agent-entrypoint", "", "the CLI `path` to check (with one --agent) instead of the one on PATH")
	asJSON := fs.Bool("json", false, "print one JSON object per agent instead of a table")
	keep := fs.Bool("keep", false, "keep each check's directory (its output dir is listed)")
	watch := fs.Bool("releases", false, "ask the registries for newer releases of the tested packages instead of checking the CLIs here")
	if err := parseFlags(fs, doctorUsage, args, stdout); err != nil {
		if err == pflag.ErrHelp {
			return 0
		}
		fmt.Fprintf(stderr, "pvisor doctor: %v\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pvisor doctor: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *watch {
		if len(*agentsFlag) > 0 || *entry != "" || *keep {
			fmt.Fprintln(stderr, "pvisor doctor: --releases checks every tested package; it takes no --agent, --agent-entrypoint or --keep")
			return 2
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer stop()
		rows := releases.Check(ctx, releases.Clients{}, tested.Releases(), tested.Successors(), time.Now())
		if *asJSON {
			enc := json.NewEncoder(stdout)
			for _, r := range rows {
				enc.Encode(r)
			}
			return 0
		}
		releases.Print(stdout, rows)
		return 0
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "pvisor doctor: cannot find the pvisor binary to run the checks with: %v\n", err)
		return 50
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	rows, err := doctor.Check(ctx, doctor.Options{Agents: *agentsFlag, Entrypoint: *entry, Self: self,
		WorkDir: os.TempDir(), Keep: *keep, Path: os.Getenv("PATH")})
	if err != nil {
		fmt.Fprintf(stderr, "pvisor doctor: %v\n", err)
		return 2
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, r := range rows {
			enc.Encode(r)
		}
	} else {
		printDoctor(stdout, rows)
	}
	return doctor.ExitCode(rows)
}

func printDoctor(w io.Writer, rows []doctor.Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tVERSION\tTESTED RANGE\tIN RANGE\tREPLAY\tCONTINUE\tENVELOPE\tSECONDS")
	yes := map[bool]string{true: "yes", false: "no"}
	ok := map[bool]string{true: "ok", false: "FAIL"}
	for _, r := range rows {
		if r.Status == doctor.StatusNotFound {
			fmt.Fprintf(tw, "%s\t-\t%s\t-\t-\t-\t-\t-\n", r.Agent, r.TestedRange)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\n", r.Agent, orDash(r.Version), r.TestedRange, yes[r.InRange],
			ok[r.ReplayOK], ok[r.ContinueOK], orDash(r.Envelope), r.Seconds)
	}
	tw.Flush()
	for _, r := range rows {
		switch {
		case r.Status == doctor.StatusNotFound:
			fmt.Fprintf(w, "%s: not checked: %s\n", r.Agent, r.Error)
		case r.Status == doctor.StatusFailed:
			fmt.Fprintf(w, "%s: FAILED (exit %d): %s\n", r.Agent, r.ExitCode, r.Error)
		case !r.InRange:
			fmt.Fprintf(w, "%s: %s works but is outside the tested range %s: runs with it need --allow-untested-version and are marked degraded\n",
				r.Agent, r.Version, r.TestedRange)
		}
		if r.Status != doctor.StatusNotFound && r.Network != "loopback-only namespace" {
			fmt.Fprintf(w, "%s: network: %s\n", r.Agent, r.Network)
		}
		if r.Output != "" {
			fmt.Fprintf(w, "%s: outputs in %s\n", r.Agent, r.Output)
		}
	}
}

// cmdNetns is the child side of the doctor's checks: inside the new network
// namespace it brings lo up, then runs its arguments as a pvisor command.
func cmdNetns(args []string, stdout, stderr io.Writer) int {
	if err := doctor.EnterLoopback(); err != nil {
		fmt.Fprintf(stderr, "pvisor: %v\n", err)
		return 50
	}
	return run(args, stdout, stderr)
}
