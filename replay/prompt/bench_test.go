package prompt

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkExpandParallel expands a file with four 100 ms commands and,
// in the same loop, runs the same commands one after another through the
// same executor (the baseline): the ratio shows the expressions overlap.
func BenchmarkExpandParallel(b *testing.B) {
	e, err := NewExecutor(ExecOptions{Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ws := b.TempDir()
	const cmd = "sleep 0.1; echo x"
	file := filepath.Join(b.TempDir(), "p.md")
	os.WriteFile(file, []byte(strings.Repeat("!`"+cmd+"` ", 4)), 0o644)
	tpl, err := Load(Source{File: file}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var par, seq time.Duration
	for b.Loop() {
		t0 := time.Now()
		if res, err := tpl.Expand(ctx, ws, e); err != nil || res.Text != "x x x x " {
			b.Fatalf("%q %v", res.Text, err)
		}
		t1 := time.Now()
		for range 4 {
			if _, err := e.Run(ctx, cmd, ws); err != nil {
				b.Fatal(err)
			}
		}
		par, seq = par+t1.Sub(t0), seq+time.Since(t1)
	}
	b.ReportMetric(float64(par)/float64(seq), "parallel/sequential")
}

// BenchmarkWatcher feeds 1 MiB of assistant text in 4 KiB writes with the
// signal at the end, against one bytes.Index over the whole text (the
// baseline, which needs the text kept in memory).
func BenchmarkWatcher(b *testing.B) {
	text := []byte(strings.Repeat("The agent explains what it did. ", 1<<15) + DefaultSignal)
	var watch, base time.Duration
	for b.Loop() {
		t0 := time.Now()
		w, _ := NewWatcher(Completion{}, nil)
		for p := text; len(p) > 0; {
			n := min(4096, len(p))
			w.Write(p[:n])
			p = p[n:]
		}
		t1 := time.Now()
		if w.Matched() == "" || bytes.Index(text, []byte(DefaultSignal)) < 0 {
			b.Fatal("no match")
		}
		watch, base = watch+t1.Sub(t0), base+time.Since(t1)
	}
	b.ReportMetric(float64(watch)/float64(base), "watcher/index")
	b.SetBytes(int64(len(text)))
}
