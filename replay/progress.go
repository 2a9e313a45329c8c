package replay

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

// Progress modes (Request.Progress). The engine reports on stderr, so
// stdout stays the one result line; "" and ProgressOff say nothing (batch
// children, library callers).
const (
	ProgressOff   = "off"
	ProgressLines = "lines" // one plain line per event: logs, CI, pipes
	ProgressLive  = "live"  // one line rewritten in place: a terminal
)

// progress turns journal events and model requests into progress lines:
// which step of the prefix is running, then the continuation's model
// requests and live steps. It never prints prompt text or tool output.
type progress struct {
	w     io.Writer
	live  bool
	start time.Time
	steps int // the boundary: steps 1..steps are replayed

	mu      sync.Mutex
	shown   bool // a live line is on screen
	request int
}

func newProgress(mode string, w io.Writer, afterStep int) *progress {
	if mode != ProgressLines && mode != ProgressLive {
		return nil
	}
	return &progress{w: w, live: mode == ProgressLive, start: time.Now(), steps: afterStep}
}

// say prints one progress line (nil p prints nothing).
func (p *progress) say(format string, args ...any) {
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

// end leaves a live line on screen, ending it.
func (p *progress) end() {
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

// event reports a journal event.
func (p *progress) event(name string, data any) {
	if p == nil {
		return
	}
	d, _ := data.(map[string]any)
	switch name {
	case result.EventPlanValidated:
		p.say("plan: %d step(s) to replay", p.steps)
	case result.EventToolStarted:
		p.say("replaying step %v/%d: %v", d["batch"], p.steps, d["tool"])
	case result.EventSessionRebuilt:
		if d["prepared_only"] == true {
			p.say("prefix prepared with the recorded observations (nothing run)")
			break
		}
		p.say("session rebuilt with the fresh observations")
	case eventContinuationStarted:
		p.say("continuing %v %v through the bridge (upstream %v)", d["agent"], d["version"], d["upstream"])
	case eventContinuationFinished:
		p.say("continuation finished: %v, %v live step(s)", d["agent_status"], d["continued_steps"])
	case result.EventRunFinished:
		p.say("done: %v", d["status"])
		p.end()
	case result.EventRunFailed:
		p.say("failed: %v", d["category"])
		p.end()
	}
}

// conversation wraps the envelope so every forwarded model request shows.
func (p *progress) conversation(c envelope.Conversation) bridge.Conversation {
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
			p.say("model request %d (%d live step(s) so far)", n, rep.MaxLiveTurns)
		}
		return fwd, err
	})
}

// ProgressMode is the mode for a writer: live on a terminal, plain lines
// otherwise; quiet turns it off.
func ProgressMode(f *os.File, quiet bool) string {
	switch {
	case quiet:
		return ProgressOff
	case isTerminal(f):
		return ProgressLive
	}
	return ProgressLines
}

func isTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
