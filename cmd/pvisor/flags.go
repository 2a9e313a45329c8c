package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/replay/resume"
	"github.com/pvisor/pvisor/trajectory/agents"
)

// parseFlags parses args into fs for every subcommand alike: --help and -h
// print usage and fs's flags to stdout (so 'pvisor X --help | less' works)
// and return pflag.ErrHelp; pflag prints nothing itself, and an unknown flag
// close to a known one says which was meant.
func parseFlags(fs *pflag.FlagSet, usage string, args []string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if err == pflag.ErrHelp {
		printHelp(stdout, usage, fs)
		return err
	}
	return flagError(fs, err)
}

// printHelp is usage followed by fs's flags.
func printHelp(w io.Writer, usage string, fs *pflag.FlagSet) {
	fmt.Fprint(w, withAgents(usage))
	if fs != nil {
		fmt.Fprint(w, fs.FlagUsages())
	}
}

// flagError adds "did you mean --x?" to an unknown flag close to one of fs's.
func flagError(fs *pflag.FlagSet, err error) error {
	var ne *pflag.NotExistError
	if err == nil || !errors.As(err, &ne) || ne.GetSpecifiedShortnames() != "" {
		return err
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if s := agents.Closest(ne.GetSpecifiedName(), names); s != "" {
		return fmt.Errorf("%w; did you mean --%s?", err, s)
	}
	return err
}

// overlaynetModes are the values --overlaynet takes as a separate word.
var overlaynetModes = []string{"auto", "off", "proxy", "deny"}

// optionalValue joins "--flag value" into "--flag=value" when value is one
// of values: a flag whose value is optional (pVisor's `--overlaynet
// [auto|off|proxy]`, proxy when alone) would otherwise leave the value as
// a stray argument. Nothing after "--" is touched.
func optionalValue(args []string, flag string, values []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == flag && i+1 < len(args) && slices.Contains(values, args[i+1]) {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

// agentHint is "; did you mean X?" for a mistyped agent name, or "".
func agentHint(name string) string { return agents.DidYouMean(name) }

// joinAgents lists agent names for help texts.
func joinAgents(names []string) string { return strings.Join(names, ", ") }

// withAgents fills the agent lists of a usage text from the registry, so
// that no command's help names an agent by hand: {agents} every agent,
// {session-agents} those whose session files can be located and
// rewritten, {capture-agents} those capture takes, {resume-agents} those
// resume and fork continue, {example-agent} one a replay continues,
// {session-stores} a line per session agent in its own words.
func withAgents(usage string) string {
	list := func(names []string) string { return strings.Join(names, ", ") }
	return strings.NewReplacer(
		"{agents}", list(agents.Names()),
		"{session-agents}", list(sessionAgents()),
		"{capture-agents}", list(captureAgents()),
		"{resume-agents}", list(resume.ResumeAgents()),
		"{example-agent}", agents.Launchers()[0],
		"{session-stores}", sessionStores(),
	).Replace(usage)
}

// upstreamTimeoutVars declares the model upstream's timeouts. Unset, they
// stay 0 (the bridge's defaults), so a --config or a batch can still set
// them and --upstream recorded, which has no use for them, can refuse them.
func upstreamTimeoutVars(fs *pflag.FlagSet, firstByte, idle *time.Duration) {
	fs.DurationVar(firstByte, "upstream-first-byte-timeout", 0,
		"fail a model request whose response headers take longer (default "+bridge.DefaultFirstByteTimeout.String()+": room for a non-streamed answer's thinking)")
	fs.DurationVar(idle, "upstream-idle-timeout", 0,
		"fail a model answer whose stream is silent longer (default "+bridge.DefaultIdleTimeout.String()+")")
}

// checkUpstreamTimeouts refuses a timeout given as 0 or less: 0 would read
// as "no timeout" but means the default.
func checkUpstreamTimeouts(fs *pflag.FlagSet) error {
	for _, name := range []string{"upstream-first-byte-timeout", "upstream-idle-timeout"} {
		if f := fs.Lookup(name); f != nil && fs.Changed(name) {
			if d, _ := time.ParseDuration(f.Value.String()); d <= 0 {
				return fmt.Errorf("--%s %s: give a positive duration such as 10m", name, f.Value)
			}
		}
	}
	return nil
}

// sessionStores is each session agent's Describe, indented for a help text.
func sessionStores() string {
	var b strings.Builder
	for i, name := range sessionAgents() {
		rw, _ := agents.Rewriter(name)
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "    %s: %s", name, rw.Describe())
	}
	return b.String()
}
