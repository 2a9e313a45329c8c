package formattest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pvisor/pvisor/trajectory"
)

// Column is an optional part of a Summary, for what some formats record and
// others do not.
type Column int

const (
	// Reasoning adds reasoning=N, the length of Action.Reasoning.
	Reasoning Column = iota + 1
	// Bytes adds bytes=A-B, the byte span of each action's records.
	Bytes
	// Torn adds torn=none or torn=line N (B bytes at O) to the header, for
	// formats that tolerate a torn final line.
	Torn
	// Sizes adds [args=N] to each call and [content=N] to each result.
	Sizes
)

// Summary is the compact, reviewable form of a decode that golden files
// hold: a header line, then one line per action with its step, span and
// calls, each call as name(id)@where->where-its-result-is ("none" when it
// has none, "!" after an error result), where is First, or First-Last when
// the call or result spans several units, after the unit when it is not
// the action's (an OpenCode export locates calls by part within a message).
func Summary(tr *trajectory.Trajectory, cols ...Column) string {
	has := func(c Column) bool { return slices.Contains(cols, c) }
	var b strings.Builder
	fmt.Fprintf(&b, "agent=%s version=%q session=%q format=%s lines=%d",
		tr.Agent, tr.Version, tr.SessionID, tr.Format, tr.Lines)
	if has(Torn) {
		if tt := tr.TornTail; tt != nil {
			fmt.Fprintf(&b, " torn=line %d (%d bytes at %d)", tt.Line, tt.Bytes, tt.Offset)
		} else {
			b.WriteString(" torn=none")
		}
	}
	fmt.Fprintf(&b, " actions=%d steps=%d\n", len(tr.Actions), len(tr.Steps()))
	for i := range tr.Actions {
		a := &tr.Actions[i]
		l := a.Locator
		fmt.Fprintf(&b, "#%d step=%d complete=%v %s %d-%d", i+1, a.Step, a.Complete(), l.Unit, l.First, l.Last)
		if has(Bytes) {
			fmt.Fprintf(&b, " bytes=%d-%d", l.StartByte, l.EndByte)
		}
		fmt.Fprintf(&b, " text=%d", len(a.Text))
		if has(Reasoning) {
			fmt.Fprintf(&b, " reasoning=%d", len(a.Reasoning))
		}
		b.WriteString(" calls=[")
		for j, c := range a.Calls {
			if j > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s(%s)@%s", c.Name, c.ID, span(c.Locator, l.Unit))
			if has(Sizes) {
				fmt.Fprintf(&b, "[args=%d]", len(c.Arguments))
			}
			o := c.Observation
			if o == nil {
				b.WriteString("->none")
				continue
			}
			fmt.Fprintf(&b, "->%s", span(o.Locator, l.Unit))
			if has(Sizes) {
				fmt.Fprintf(&b, "[content=%d]", len(o.Content))
			}
			if o.IsError {
				b.WriteByte('!')
			}
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// span is where l is, in the terms of a Summary line of unit.
func span(l trajectory.Locator, unit string) string {
	s := fmt.Sprint(l.First)
	if l.Last != l.First {
		s += fmt.Sprintf("-%d", l.Last)
	}
	if l.Unit != unit {
		s = l.Unit + " " + s
	}
	return s
}
