// Package progress turns a replay's journal events and model requests into
// progress lines on stderr (stdout stays the one result line): which step
// of the prefix is running, then the continuation's model requests and live
// steps. It never prints prompt text or tool output.
package progress

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/result"
)

// Modes (replay's Request.Progress): "" and Off say nothing (batch
// children, library callers).
const (
	Off   = "off"
	Lines = "lines" // one plain line per event: logs, CI, pipes
	Live  = "live"  // one line rewritten in place: a terminal
)

// Reporter turns journal events and model requests into progress lines:
// which step of the prefix is running, then the continuation's model
// requests and live steps. It never prints prompt text or tool output.
type Reporter struct {
	w     io.Writer
	live  bool
	start time.Time
	steps int // the boundary: steps 1..steps are replayed

	mu      sync.Mutex
	shown   bool // a live line is on screen
	request int
}

// New is the reporter for mode (nil when it says nothing).
func New(mode string, w io.Writer, afterStep int) *Reporter {
	if mode != Lines && mode != Live {
		return nil
	}
	return &Reporter{w: w, live: mode == Live, start: time.Now(), steps: afterStep}
}

// Say prints one progress line (nil p prints nothing).
func (p *Reporter) Say(format string, args ...any) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf("pvisor [%6.1fs] ", time.Since(p.start).Seconds()) + fmt.Sprintf(format, args...)
	if p.live {
		fmt.Fprint(p.w, "\r\033[K"+line)
		p.shown = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// End leaves a live line on screen, ending it.
func (p *Reporter) End() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprintln(p.w)
		p.shown = false
	}
}

// Event reports a journal event.
func (p *Reporter) Event(name string, data any) {
	if p == nil {
		return
	}
	d, _ := data.(map[string]any)
	switch name {
	case result.EventPlanValidated:
		p.Say("plan: %d step(s) to replay", p.steps)
	case result.EventToolStarted:
		p.Say("replaying step %v/%d: %v", d["batch"], p.steps, d["tool"])
	case result.EventSessionRebuilt:
		if d["prepared_only"] == true {
			p.Say("prefix prepared with the recorded observations (nothing run)")
			break
		}
		p.Say("session rebuilt with the fresh observations")
	case result.EventContinuationStarted:
		p.Say("continuing %v %v through the bridge (upstream %v)", d["agent"], d["version"], d["upstream"])
	case result.EventContinuationFinished:
		p.Say("continuation finished: %v, %v live step(s)", d["agent_status"], d["continued_steps"])
	case result.EventRunFinished:
		p.Say("done: %v", d["status"])
		p.End()
	case result.EventRunFailed:
		p.Say("failed: %v", d["category"])
		p.End()
	}
}

// Conversation wraps the envelope so every forwarded model request shows.
func (p *Reporter) Conversation(c envelope.Conversation) bridge.Conversation {
	if p == nil {
		return c
	}
	return bridge.ConversationFunc(func(ctx context.Context, req *bridge.Request) ([]byte, error) {
		fwd, err := c.Check(ctx, req)
		if err == nil && req.Route != bridge.RouteCountTokens {
			rep := c.Report()
			p.mu.Lock()
			p.request++
			n := p.request
			p.mu.Unlock()
			p.Say("model request %d (%d live step(s) so far)", n, rep.MaxLiveTurns)
		}
		return fwd, err
	})
}

// Mode is the mode for a writer: live on a terminal, plain lines
// otherwise; quiet turns it off.
func Mode(f *os.File, quiet bool) string {
	switch {
	case quiet:
		return Off
	case isTerminal(f):
		return Live
	}
	return Lines
}

func isTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
