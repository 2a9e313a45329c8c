package prompt

import (
	"strings"
	"testing"
	"time"
)

// fakeClock is the injected clock: time moves only when a test says so.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock               { return &fakeClock{t: time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)} }
func watcher(t *testing.T, c Completion, clk *fakeClock) *Watcher {
	t.Helper()
	w, err := NewWatcher(c, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// A signal matches however the text is cut, including one byte at a time
// and across a multi-byte character.
func TestWatcherMatchesAcrossChunks(t *testing.T) {
	texts := []string{
		"Done. " + DefaultSignal + "\n",
		"ünïcode first " + DefaultSignal,
		DefaultSignal,
	}
	for _, text := range texts {
		for cut1 := 0; cut1 <= len(text); cut1++ {
			for _, cut2 := range []int{cut1, (cut1 + len(text)) / 2, len(text)} {
				if cut2 < cut1 {
					continue
				}
				w := watcher(t, Completion{}, newClock())
				for _, part := range []string{text[:cut1], text[cut1:cut2], text[cut2:]} {
					w.WriteString(part)
				}
				if got := w.Matched(); got != DefaultSignal {
					t.Fatalf("%q cut at %d,%d: matched %q", text, cut1, cut2, got)
				}
			}
		}
		w := watcher(t, Completion{}, newClock())
		for i := range len(text) {
			w.WriteString(text[i : i+1])
		}
		if w.Matched() != DefaultSignal {
			t.Errorf("%q byte by byte: no match", text)
		}
	}
}

func TestWatcherSignals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		signals []string
		chunks  []string
		want    string
	}{
		{"no signal", nil, []string{"<promise>COMPLETE", "</promise", " >"}, ""},
		{"near miss", nil, []string{"<promise>COMPLETED</promise>"}, ""},
		{"custom signal", []string{"ALL DONE"}, []string{"ALL ", "DONE"}, "ALL DONE"},
		{"default is replaced", []string{"ALL DONE"}, []string{DefaultSignal}, ""},
		{"first in the stream wins", []string{"<b>", "<a>"}, []string{"x <a> y <b>"}, "<a>"},
		{"first across chunks", []string{"LONG-SIGNAL", "X"}, []string{"LONG-SIG", "NAL X"}, "LONG-SIGNAL"},
		{"first to end wins", []string{"ABCDEF", "CD"}, []string{"ABC", "DEF"}, "CD"},
		{"later signals do not change it", []string{"ONE", "TWO"}, []string{"TWO", "ONE"}, "TWO"},
		{"long text before", nil, []string{strings.Repeat("x", 100000), "<promise>COMP", "LETE</promise>"}, DefaultSignal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := watcher(t, Completion{Signals: tc.signals}, newClock())
			for _, c := range tc.chunks {
				if n, err := w.WriteString(c); n != len(c) || err != nil {
					t.Fatalf("write %d, %v", n, err)
				}
			}
			if got := w.Matched(); got != tc.want {
				t.Errorf("matched %q, want %q", got, tc.want)
			}
			if len(w.carry) > w.keep {
				t.Errorf("keeps %d bytes, more than %d", len(w.carry), w.keep)
			}
		})
	}
}

// The states over time: waiting until the signal, then completing while
// output continues, done once the completion timeout passes in silence.
func TestWatcherStates(t *testing.T) {
	clk := newClock()
	w := watcher(t, Completion{Timeout: 10 * time.Second}, clk)
	step := func(what string, want State) {
		t.Helper()
		if got := w.State(); got != want {
			t.Fatalf("%s: state %v, want %v", what, got, want)
		}
	}
	clk.add(time.Hour)
	w.Activity()
	step("an hour of silence before the signal (the idle timeout is the caller's)", Waiting)
	if !w.Deadline().IsZero() {
		t.Errorf("deadline %v before the signal", w.Deadline())
	}
	w.WriteString("finished " + DefaultSignal)
	step("signal", Completing)
	if want := clk.t.Add(10 * time.Second); !w.Deadline().Equal(want) {
		t.Errorf("deadline %v, want %v", w.Deadline(), want)
	}
	clk.add(9 * time.Second)
	step("9s later", Completing)
	w.WriteString("one more line")
	clk.add(9 * time.Second)
	step("text reset the timeout", Completing)
	w.Activity()
	clk.add(9 * time.Second)
	step("activity reset the timeout", Completing)
	clk.add(time.Second)
	step("10s of silence", Done)
	if msg := w.Warning(); !strings.Contains(msg, DefaultSignal) || !strings.Contains(msg, "10s") {
		t.Errorf("warning %q", msg)
	}
}

func TestWatcherDefaultsAndErrors(t *testing.T) {
	clk := newClock()
	w := watcher(t, Completion{}, clk)
	w.WriteString(DefaultSignal)
	clk.add(DefaultCompletionTimeout - time.Nanosecond)
	if w.State() != Completing {
		t.Errorf("default timeout is shorter than %v", DefaultCompletionTimeout)
	}
	clk.add(time.Nanosecond)
	if w.State() != Done {
		t.Errorf("default timeout is longer than %v", DefaultCompletionTimeout)
	}
	for _, c := range []Completion{{Signals: []string{"ok", ""}}, {Timeout: -time.Second}} {
		if _, err := NewWatcher(c, nil); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
