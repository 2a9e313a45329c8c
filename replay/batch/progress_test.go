package batch

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/result"
)

func TestProgressLiveAndPlain(t *testing.T) {
	failed := result.New("r2", "codex")
	failed.Fail(result.ExecutorError, "boom")
	line, _ := json.Marshal(failed)
	for _, tc := range []struct {
		live bool
		want []string
		not  []string
	}{
		{true, []string{"\r\033[Kbatch: 1/3 done, 0 failed, 1 running (r1), ETA ?", "\r\033[Kr2: failed, exit 30 executor_error\n", "batch: 3/3 done, 1 failed, 0 running, ETA 0s\n"}, []string{"[1/3]", "started"}},
		{false, []string{"batch: 1 of 3 runs already done, skipped\n", "batch: started r1 (1 running)\n", "batch: [2/3] r1 ok (1.5s)\n", "batch: [3/3] r2 failed, exit 30 executor_error (0.2s)\n"}, []string{"\r", "ETA"}},
	} {
		var b bytes.Buffer
		p := newProgress(&b, tc.live, 3, 1)
		p.started("r1")
		p.finished("r1", &Record{ExitCode: 0, WallMS: 1500}, false)
		p.started("r2")
		p.finished("r2", &Record{ExitCode: 30, WallMS: 200, Result: line}, false)
		p.stop()
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("live=%v: output lacks %q:\n%q", tc.live, w, b.String())
			}
		}
		for _, n := range tc.not {
			if strings.Contains(b.String(), n) {
				t.Errorf("live=%v: output has %q:\n%q", tc.live, n, b.String())
			}
		}
	}
}

func TestProgressNamesTheRunsInFlight(t *testing.T) {
	for _, tc := range []struct {
		start, finish []string
		want          string
	}{
		{[]string{"a"}, nil, "1 running (a), ETA"},
		{[]string{"a", "b"}, nil, "2 running (a, b), ETA"},
		{[]string{"a", "b", "c", "d"}, nil, "4 running (a, b +2 more), ETA"},
		{[]string{"a", "b", "c"}, []string{"a"}, "2 running (b, c), ETA"},
		{[]string{"a", "b"}, []string{"b", "a"}, "0 running, ETA"},
	} {
		var b bytes.Buffer
		p := newProgress(&b, true, 5, 0)
		for _, id := range tc.start {
			p.started(id)
		}
		for _, id := range tc.finish {
			p.finished(id, &Record{}, false)
		}
		p.mu.Lock()
		b.Reset()
		p.redraw()
		got := b.String()
		p.mu.Unlock()
		p.stop()
		if !strings.Contains(got, tc.want) {
			t.Errorf("started %v, finished %v: live line %q, want %q", tc.start, tc.finish, got, tc.want)
		}
	}
}
