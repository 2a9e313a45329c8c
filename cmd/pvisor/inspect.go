package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/pflag"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/agents"
)

const inspectUsage = `Usage: pvisor inspect FILE [--agent A] [--instance ID] [--json]

Lists the model responses of a native session: each complete tool batch is a
step (the unit of --after-step); text-only responses are listed without an
ordinal. The agent is detected from the file unless --agent is given. An
OpenHands output.jsonl holding several instances lists them; --instance ID
inspects one.

Example:
    $ pvisor inspect --json rollout.jsonl | jq '.steps[] | select(.ordinal) | .tool_calls[].name'

Flags:
`

type inspectJSON struct {
	Agent   string `json:"agent"`
	Version string `json:"version"`
	// MinVersion and BeforeVersion date a file that records no version
	// by what it holds (Pi).
	MinVersion    string               `json:"min_version,omitempty"`
	BeforeVersion string               `json:"before_version,omitempty"`
	SessionID     string               `json:"session_id"`
	TornTail      *trajectory.TornTail `json:"torn_tail,omitempty"`
	// JoinedLines are lines holding several records with no newline
	// between them; the agent's loader skips them, and so does pvisor.
	JoinedLines []trajectory.JoinedLine `json:"joined_lines,omitempty"`
	Steps       []inspectStep           `json:"steps"`
}

type inspectStep struct {
	Ordinal       *int               `json:"ordinal"`
	Complete      bool               `json:"complete"`
	NativeLocator trajectory.Locator `json:"native_locator"`
	Text          string             `json:"text"`
	ToolCalls     []inspectCall      `json:"tool_calls"`
}

type inspectCall struct {
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func cmdInspect(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("inspect", pflag.ContinueOnError)
	agent := fs.String("agent", "", "agent that wrote the file (detected when omitted)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	instance := fs.String("instance", "", "instance `id` of an OpenHands output.jsonl holding several")
	if err := parseFlags(fs, inspectUsage, args, stdout); err != nil {
		if err == pflag.ErrHelp {
			return 0
		}
		fmt.Fprintf(stderr, "pvisor inspect: %v\n", err)
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "pvisor inspect: expected one FILE, got %d arguments\n\n", fs.NArg())
		printHelp(stderr, inspectUsage, fs)
		return 2
	}
	path := fs.Arg(0)
	t, code, err := decodeForInspect(path, *agent, *instance)
	if err != nil && *instance == "" {
		for _, f := range agents.All() {
			if m, ok := f.(trajectory.MultiSession); ok && m.IsMultiple(err) {
				return listInstances(path, f.Agent(), m, *asJSON, stdout, stderr)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "pvisor inspect: %v\n", err)
		return code
	}
	out := toInspectJSON(t)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return 50
		}
		return 0
	}
	printInspectTable(stdout, out)
	return 0
}

func decodeForInspect(path, agent, instance string) (*trajectory.Trajectory, int, error) {
	f, _, err := replay.OpenTrajectory(path)
	if err != nil {
		code := 10
		var rf *replay.Failure
		if errors.As(err, &rf) {
			code = result.ExitCode(&result.Failure{Category: rf.Category})
		}
		return nil, code, err
	}
	defer f.Close()
	var format trajectory.Format
	if agent != "" {
		var ok bool
		if format, ok = agents.Lookup(agent); !ok {
			return nil, 2, fmt.Errorf("unknown agent %q (supported: %s)%s", agent, strings.Join(agents.Names(), ", "), agentHint(agent))
		}
	} else if format, err = agents.Detect(path); err != nil {
		return nil, 10, err
	}
	t, err := format.Decode(f, trajectory.Options{SkipObservationContent: true, Instance: instance})
	if err != nil {
		code := 10
		if trajectory.IsUnsupported(err) {
			code = 11
		}
		return nil, code, fmt.Errorf("%s (%s): %w", path, format.Agent(), err)
	}
	if t.Agent == "" {
		t.Agent = format.Agent()
	}
	return t, 0, nil
}

func toInspectJSON(t *trajectory.Trajectory) inspectJSON {
	out := inspectJSON{Agent: t.Agent, Version: t.Version, MinVersion: t.MinVersion, BeforeVersion: t.BeforeVersion, SessionID: t.SessionID, TornTail: t.TornTail, JoinedLines: t.Joined, Steps: []inspectStep{}}
	for i := range t.Actions {
		a := &t.Actions[i]
		s := inspectStep{Complete: a.Complete(), NativeLocator: a.Locator, Text: a.Text, ToolCalls: []inspectCall{}}
		if a.Step > 0 {
			n := a.Step
			s.Ordinal = &n
		}
		for _, c := range a.Calls {
			s.ToolCalls = append(s.ToolCalls, inspectCall{CallID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		out.Steps = append(out.Steps, s)
	}
	return out
}

func printInspectTable(w io.Writer, out inspectJSON) {
	version := out.Version
	if version == "" {
		version = "version unknown"
		switch {
		case out.MinVersion != "" && out.BeforeVersion != "":
			version += fmt.Sprintf(" (its records: >=%s <%s)", out.MinVersion, out.BeforeVersion)
		case out.MinVersion != "":
			version += fmt.Sprintf(" (its records: >=%s)", out.MinVersion)
		case out.BeforeVersion != "":
			version += fmt.Sprintf(" (its records: <%s)", out.BeforeVersion)
		}
	}
	fmt.Fprintf(w, "%s %s, session %s, %d steps\n", out.Agent, version, orDash(out.SessionID), countSteps(out))
	if out.TornTail != nil {
		fmt.Fprintf(w, "note: torn final line %d (%d bytes, no newline) was ignored\n", out.TornTail.Line, out.TornTail.Bytes)
	}
	for _, j := range out.JoinedLines {
		fmt.Fprintf(w, "note: line %d holds %d records joined without a newline; %s skips it as malformed, and so does this reading\n", j.Line, j.Records, out.Agent)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tCOMPLETE\tNATIVE\tACTION")
	for _, s := range out.Steps {
		ord := "-"
		if s.Ordinal != nil {
			ord = fmt.Sprint(*s.Ordinal)
		}
		complete := "yes"
		if !s.Complete {
			complete = "no"
		}
		if len(s.ToolCalls) == 0 {
			complete = ""
		}
		var parts []string
		for _, c := range s.ToolCalls {
			parts = append(parts, c.Name+"("+summarizeArgs(c.Arguments)+")")
		}
		action := strings.Join(parts, ", ")
		if action == "" {
			action = "text: " + clip(oneLine(s.Text), 70)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", ord, complete, s.NativeLocator, action)
	}
	tw.Flush()
}

func countSteps(out inspectJSON) int {
	n := 0
	for _, s := range out.Steps {
		if s.Ordinal != nil {
			n++
		}
	}
	return n
}

// argKeys are the arguments that best tell calls apart, in preference order.
var argKeys = []string{"command", "cmd", "file_path", "path", "filePath", "pattern", "query", "url", "chars", "description"}

func summarizeArgs(args json.RawMessage) string {
	v := gjson.ParseBytes(args)
	if v.Type == gjson.String {
		return clip(oneLine(v.String()), 50)
	}
	for _, k := range argKeys {
		if f := v.Get(gjsonEscape(k)); f.Exists() {
			s := f.String()
			if f.IsArray() {
				var parts []string
				for _, e := range f.Array() {
					parts = append(parts, e.String())
				}
				s = strings.Join(parts, " ")
			}
			return clip(oneLine(s), 50)
		}
	}
	return clip(oneLine(v.Raw), 50)
}

func gjsonEscape(k string) string {
	return strings.NewReplacer(".", `\.`, "*", `\*`, "?", `\?`).Replace(k)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// listInstances prints the instances of a file holding several sessions
// (an OpenHands output.jsonl), each one a --instance value.
func listInstances(path, agent string, m trajectory.MultiSession, asJSON bool, stdout, stderr io.Writer) int {
	f, _, err := replay.OpenTrajectory(path)
	if err != nil {
		fmt.Fprintf(stderr, "pvisor inspect: %v\n", err)
		return 10
	}
	defer f.Close()
	insts, err := m.Instances(f)
	if err != nil {
		fmt.Fprintf(stderr, "pvisor inspect: %s: %v\n", path, err)
		return 10
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"agent": agent, "instances": insts}); err != nil {
			return 50
		}
		return 0
	}
	fmt.Fprintf(stdout, "%s output.jsonl with %d instances; choose one with --instance ID\n", agent, len(insts))
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LINE\tINSTANCE\tEVENTS")
	for _, in := range insts {
		fmt.Fprintf(tw, "%d\t%s\t%d\n", in.Line, orDash(in.ID), in.Events)
	}
	tw.Flush()
	return 0
}
