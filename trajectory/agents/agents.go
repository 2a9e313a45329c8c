// Package agents lists every native format pvisor reads and picks the right
// one for a file.
package agents

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/claude"
	"github.com/pvisor/pvisor/trajectory/codex"
	"github.com/pvisor/pvisor/trajectory/copilot"
	"github.com/pvisor/pvisor/trajectory/kimi"
	"github.com/pvisor/pvisor/trajectory/miniswe"
	"github.com/pvisor/pvisor/trajectory/opencode"
	"github.com/pvisor/pvisor/trajectory/openhands"
	"github.com/pvisor/pvisor/trajectory/pi"
	"github.com/pvisor/pvisor/trajectory/sweagent"
)

// registry is every agent, in the order detection tries their formats. It
// is the only list of agents in pvisor: adding one is its folder and a line
// here.
var registry = []launch.Agent{
	claude.Agent(),
	codex.Agent(),
	opencode.Agent(),
	pi.Agent(),
	openhands.Agent(),
	miniswe.Agent(),
	sweagent.Agent(),
	copilot.Agent(),
	kimi.Agent(),
}

// all is the formats, in detection order.
var all = func() []trajectory.Format {
	out := make([]trajectory.Format, len(registry))
	for i, a := range registry {
		out[i] = a.Format
	}
	return out
}()

// List returns every agent, in detection order.
func List() []launch.Agent { return registry }

// Get returns the agent called name (or one of its aliases).
func Get(name string) (launch.Agent, bool) {
	name = Canonical(name)
	for _, a := range registry {
		if a.Name() == name {
			return a, true
		}
	}
	return launch.Agent{}, false
}

// Canonical maps an alias ("pi-agent") to the agent's name; other names
// are returned as they are.
func Canonical(name string) string {
	for _, a := range registry {
		if slices.Contains(a.Aliases, name) {
			return a.Name()
		}
	}
	return name
}

// All returns every supported format.
func All() []trajectory.Format { return all }

// Names returns the agent names, in detection order.
func Names() []string {
	out := make([]string, len(all))
	for i, f := range all {
		out[i] = f.Agent()
	}
	return out
}

// Lookup returns the format for an agent name.
func Lookup(name string) (trajectory.Format, bool) {
	a, ok := Get(name)
	return a.Format, ok
}

// Launchers names the agents whose continuation this build supports, in
// detection order.
func Launchers() []string {
	var out []string
	for _, a := range registry {
		if a.Launcher != nil {
			out = append(out, a.Name())
		}
	}
	return out
}

// HeadSize is how much of a file detection looks at.
const HeadSize = 64 << 10

// Head reads the first HeadSize bytes of r.
func Head(r io.ReaderAt) ([]byte, error) {
	buf := make([]byte, HeadSize)
	n, err := r.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return nil, err
	}
	return buf[:n], nil
}

// Matching returns the agents whose format claims head.
func Matching(head []byte) []string {
	var out []string
	for _, f := range all {
		if f.Detect(head) {
			out = append(out, f.Agent())
		}
	}
	return out
}

// DetectError says why no single agent could be chosen.
type DetectError struct {
	Path    string
	Matched []string
}

func (e *DetectError) Error() string {
	if len(e.Matched) == 0 {
		return fmt.Sprintf("%s: not a session file of any known agent (tried %s); pass --agent if you know which agent wrote it",
			e.Path, strings.Join(Names(), ", "))
	}
	return fmt.Sprintf("%s: ambiguous, looks like %s; pass --agent to choose", e.Path, strings.Join(e.Matched, " and "))
}

// Detect picks the one format that claims the file at path.
func Detect(path string) (trajectory.Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head, err := Head(f)
	if err != nil {
		return nil, err
	}
	m := Matching(head)
	if len(m) != 1 {
		return nil, &DetectError{Path: path, Matched: m}
	}
	format, _ := Lookup(m[0])
	return format, nil
}
