package prompt

import (
	"bytes"
	"fmt"
	"sync"
	"time"
)

// Completion is how an agent says it is done: a signal in its assistant
// text, after which a process that hangs (a child holding stdout open, an
// MCP server) is ended as a success instead of failing on the idle timeout.
type Completion struct {
	Signals []string      // default DefaultSignal; the first one seen wins
	Timeout time.Duration // after a signal, default DefaultCompletionTimeout
}

// Defaults of Completion.
const (
	DefaultSignal            = "<promise>COMPLETE</promise>"
	DefaultCompletionTimeout = 60 * time.Second
)

// State is what a Watcher tells its caller to do.
type State int

const (
	// Waiting: no signal yet; the caller's idle timeout governs the agent.
	Waiting State = iota
	// Completing: a signal was seen; the agent may still finish on its
	// own, and the idle timeout no longer applies.
	Completing
	// Done: the completion timeout passed without new output since the
	// signal: stop the agent and count the run as completed, with
	// Watcher.Warning in the result.
	Done
)

func (s State) String() string {
	switch s {
	case Completing:
		return "completing"
	case Done:
		return "done"
	default:
		return "waiting"
	}
}

// Watcher follows an agent's output for a completion signal. Write feeds
// the assistant text as it arrives, cut anywhere (a signal split across
// writes still matches); Activity notes any other output. It is a pure
// state machine over the injected clock and safe for concurrent use.
type Watcher struct {
	signals []string
	timeout time.Duration
	now     func() time.Time
	keep    int // bytes of text kept between writes: longest signal - 1

	mu       sync.Mutex
	carry    []byte
	matched  string
	lastSeen time.Time // the latest output after the match
}

// NewWatcher returns a watcher for c; now is the clock (nil: time.Now).
func NewWatcher(c Completion, now func() time.Time) (*Watcher, error) {
	if len(c.Signals) == 0 {
		c.Signals = []string{DefaultSignal}
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultCompletionTimeout
	}
	if c.Timeout < 0 {
		return nil, fmt.Errorf("completion timeout %v: must be positive", c.Timeout)
	}
	if now == nil {
		now = time.Now
	}
	w := &Watcher{signals: c.Signals, timeout: c.Timeout, now: now}
	for _, s := range c.Signals {
		if s == "" {
			return nil, fmt.Errorf("a completion signal must not be empty")
		}
		w.keep = max(w.keep, len(s)-1)
	}
	return w, nil
}

// Write feeds assistant text. It never fails.
func (w *Watcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.matched != "" {
		w.lastSeen = w.now()
		return len(p), nil
	}
	buf := append(w.carry, p...)
	end := -1
	for _, s := range w.signals {
		// The earliest end in the stream is the signal seen first.
		if i := bytes.Index(buf, []byte(s)); i >= 0 && (end < 0 || i+len(s) < end) {
			end, w.matched = i+len(s), s
		}
	}
	if w.matched != "" {
		w.carry, w.lastSeen = nil, w.now()
		return len(p), nil
	}
	if len(buf) > w.keep {
		buf = buf[len(buf)-w.keep:]
	}
	w.carry = append(w.carry[:0:0], buf...)
	return len(p), nil
}

// WriteString is Write for text.
func (w *Watcher) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// Activity notes output other than assistant text (a tool running, a
// model request): after a signal it restarts the completion timeout.
func (w *Watcher) Activity() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.matched != "" {
		w.lastSeen = w.now()
	}
}

// Matched is the signal seen first, "" before any.
func (w *Watcher) Matched() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.matched
}

// State says where the agent is, at the clock's current time.
func (w *Watcher) State() State {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.matched == "":
		return Waiting
	case !w.now().Before(w.lastSeen.Add(w.timeout)):
		return Done
	}
	return Completing
}

// Deadline is when the agent becomes Done unless it writes again; zero
// before a signal.
func (w *Watcher) Deadline() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.matched == "" {
		return time.Time{}
	}
	return w.lastSeen.Add(w.timeout)
}

// Warning is the result's note once the watcher is Done.
func (w *Watcher) Warning() string {
	return fmt.Sprintf("the agent printed the completion signal %s, then neither exited nor wrote for %v: it was stopped and counts as completed (a child process probably kept it alive)",
		w.Matched(), w.timeout)
}
