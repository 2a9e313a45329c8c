// Package agents lists every native format pvisor reads and picks the right
// one for a file.
package agents

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/claude"
	"github.com/pvisor/pvisor/trajectory/codex"
	"github.com/pvisor/pvisor/trajectory/miniswe"
	"github.com/pvisor/pvisor/trajectory/opencode"
	"github.com/pvisor/pvisor/trajectory/openhands"
	"github.com/pvisor/pvisor/trajectory/pi"
	"github.com/pvisor/pvisor/trajectory/sweagent"
)

// all is in the order detection tries them.
var all = []trajectory.Format{
	claude.New(),
	codex.New(),
	opencode.New(),
	pi.New(),
	openhands.New(),
	miniswe.New(),
	sweagent.New(),
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
	if canon, ok := aliases[name]; ok {
		name = canon
	}
	for _, f := range all {
		if f.Agent() == name {
			return f, true
		}
	}
	return nil, false
}

// aliases are other names of agents: pVisor and its tooling call Pi
// "pi-agent".
var aliases = map[string]string{"pi-agent": trajectory.Pi}

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
