package batch

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pvisor/pvisor/result"
)

// progress reports on stderr: on a terminal one line redrawn in place
// (done/total, failed, running, ETA), otherwise one plain line per run.
type progress struct {
	mu                           sync.Mutex
	w                            io.Writer
	live                         bool
	total, skipped, done, failed int
	running                      []string // the runs in flight, in the order they started
	start                        time.Time
	tick                         *time.Ticker
	quit                         chan struct{}
	finishedOnce                 sync.Once
}

func newProgress(w io.Writer, live bool, total, skipped int) *progress {
	p := &progress{w: w, live: live, total: total, skipped: skipped, start: time.Now(), quit: make(chan struct{})}
	if w == nil {
		p.w = io.Discard
		p.live = false
	}
	if skipped > 0 {
		p.printf("batch: %d of %d runs already done, skipped\n", skipped, total)
	}
	if p.live {
		p.tick = time.NewTicker(time.Second)
		go func() {
			for {
				select {
				case <-p.tick.C:
					p.mu.Lock()
					p.redraw()
					p.mu.Unlock()
				case <-p.quit:
					return
				}
			}
		}()
	}
	return p
}

func (p *progress) printf(format string, args ...any) {
	fmt.Fprintf(p.w, format, args...)
}

func (p *progress) started(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = append(p.running, id)
	if p.live {
		p.redraw()
		return
	}
	p.printf("batch: started %s (%d running)\n", id, len(p.running))
}

func (p *progress) finished(id string, rec *Record, interrupted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(p.running, id); i >= 0 {
		p.running = slices.Delete(p.running, i, i+1)
	}
	status := "ok"
	switch {
	case interrupted:
		status = "interrupted (will run again)"
	case rec.ExitCode != 0:
		p.done++
		p.failed++
		status = fmt.Sprintf("failed, exit %d", rec.ExitCode)
		var res result.Result
		if json.Unmarshal(rec.Result, &res) == nil && res.Failure != nil {
			status += " " + res.Failure.Category
		}
	default:
		p.done++
	}
	if p.live {
		if rec.ExitCode != 0 || interrupted {
			// Failures stay on screen above the live line.
			p.printf("\r\033[K%s: %s\n", id, status)
		}
		p.redraw()
		return
	}
	p.printf("batch: [%d/%d] %s %s (%.1fs)\n", p.done+p.skipped, p.total, id, status, float64(rec.WallMS)/1000)
}

// redraw draws the live line; the caller holds mu.
func (p *progress) redraw() {
	eta := "?"
	if p.done > 0 {
		left := p.total - p.skipped - p.done
		per := time.Since(p.start) / time.Duration(p.done)
		eta = (per * time.Duration(left)).Round(time.Second).String()
	}
	p.printf("\r\033[Kbatch: %d/%d done, %d failed, %d running%s, ETA %s", p.done+p.skipped, p.total, p.failed, len(p.running), inFlight(p.running), eta)
}

// shownInFlight is how many running ids the live line names; more would
// wrap it on an ordinary terminal, and a wrapped line cannot be redrawn.
const shownInFlight = 2

// inFlight names the runs in flight, the longest-running first.
func inFlight(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	shown := ids[:min(len(ids), shownInFlight)]
	more := ""
	if n := len(ids) - len(shown); n > 0 {
		more = fmt.Sprintf(" +%d more", n)
	}
	return " (" + strings.Join(shown, ", ") + more + ")"
}

func (p *progress) stop() {
	p.finishedOnce.Do(func() {
		close(p.quit)
		if p.tick != nil {
			p.tick.Stop()
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.live {
			p.redraw()
			p.printf("\n")
		}
	})
}
