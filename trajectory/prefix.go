package trajectory

import "errors"

// Cutter keeps a trajectory that is decoded in file order down to the
// actions up to step Limit, for PrefixDecoders of formats whose responses
// are final once the next one begins (no tree to resolve at the end).
type Cutter struct {
	Limit   int // the boundary step; 0 keeps everything
	steps   int // complete actions among the settled ones
	settled int // actions counted so far
	keep    int // actions kept once the boundary's is found, 0 before
}

// Settle is called when every action in t.Actions is final: none of their
// calls can still get a result. Once step Limit is among them, the actions
// after it are passed to drop (which may be nil) and removed.
func (c *Cutter) Settle(t *Trajectory, drop func(*Action)) {
	if c.Limit <= 0 {
		return
	}
	for ; c.keep == 0 && c.settled < len(t.Actions); c.settled++ {
		if t.Actions[c.settled].Complete() {
			c.steps++
			if c.steps == c.Limit {
				c.keep = c.settled + 1
			}
		}
	}
	if c.keep == 0 || len(t.Actions) <= c.keep {
		return
	}
	for i := c.keep; i < len(t.Actions); i++ {
		if drop != nil {
			drop(&t.Actions[i])
		}
	}
	clear(t.Actions[c.keep:])
	t.Actions = t.Actions[:c.keep]
	t.Cut = c.Limit
}

// Done reports whether the boundary step is settled: every action begun
// since the last Settle, and every later one, will be dropped, so a decoder
// need not read what they say (it still validates them).
func (c *Cutter) Done() bool { return c.keep > 0 }

// ErrNeedFull is returned (wrapped or not) by a DecodePrefix that met
// something it cannot judge without what it left out, such as a call id
// that may repeat one of a dropped step: DecodePrefix then decodes it all.
var ErrNeedFull = errors.New("this file needs a full decode")
