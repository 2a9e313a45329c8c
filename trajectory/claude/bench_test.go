package claude

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	idRE   = regexp.MustCompile(`"(msg_|toolu_)[A-Za-z0-9_]+`)
)

// template is a real session prepared for cheap copying.
type template struct {
	lines [][]byte
	ids   [][][]int // per line: uuid and message/tool id matches
	root  int       // first main line with parentUuid null
	leaf  [][]byte  // per line: the uuid when it is a main user/assistant entry
}

func loadTemplate(t testing.TB, name string) template {
	data, err := os.ReadFile(filepath.Join(dataDir, name))
	if err != nil {
		t.Fatal(err)
	}
	tp := template{root: -1}
	for line := range bytes.Lines(data) {
		v := gjson.ParseBytes(line)
		main := v.Get("uuid").Exists() && !v.Get("isSidechain").Bool()
		if main && tp.root < 0 && v.Get("parentUuid").Type == gjson.Null {
			tp.root = len(tp.lines)
		}
		var leaf []byte
		if typ := v.Get("type").Str; main && (typ == "user" || typ == "assistant") {
			leaf = []byte(v.Get("uuid").Str)
		}
		m := append(uuidRE.FindAllIndex(line, -1), idRE.FindAllIndex(line, -1)...)
		slices.SortFunc(m, func(a, b []int) int { return a[0] - b[0] })
		tp.lines = append(tp.lines, line)
		tp.ids = append(tp.ids, m)
		tp.leaf = append(tp.leaf, leaf)
	}
	return tp
}

// rename makes copy k's ids unique: the last 12 hex digits of a uuid are
// scrambled with k, message and tool ids get a "_k" suffix.
func rename(dst, id []byte, k int) []byte {
	if id[0] == '"' {
		return fmt.Appendf(append(dst, id...), "_%d", k)
	}
	tail, _ := strconv.ParseUint(string(id[24:]), 16, 64)
	return fmt.Appendf(append(dst, id[:24]...), "%012x", (tail^uint64(k)*0x9E3779B97F4A7C15)&(1<<48-1))
}

// bigSession writes about size bytes made of copies of real sessions, each
// copy with fresh uuids and message and tool ids. Chained copies continue
// one conversation (everything is on the chain); unchained ones are
// separate roots (only the last copy is, the rest is dead weight).
func bigSession(t testing.TB, w io.Writer, size int64, chained bool) int {
	t.Helper()
	var tps []template
	for _, name := range []string{"codemie_incremental-subagents_turn-2.jsonl", "ccviewer_fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl", "agentcmd_full-session-four.jsonl"} {
		tps = append(tps, loadTemplate(t, name))
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var written int64
	var last, out []byte // leaf uuid of the previous copy
	copies := 0
	for k := 1; written < size; k++ {
		tp := &tps[k%len(tps)]
		for i, line := range tp.lines {
			out = out[:0]
			prev := 0
			for _, m := range tp.ids[i] {
				out = rename(append(out, line[prev:m[0]]...), line[m[0]:m[1]], k)
				prev = m[1]
			}
			out = append(out, line[prev:]...)
			if chained && i == tp.root && last != nil {
				out = bytes.Replace(out, []byte(`"parentUuid":null`), []byte(`"parentUuid":"`+string(last)+`"`), 1)
			}
			n, err := bw.Write(out)
			if err != nil {
				t.Fatal(err)
			}
			written += int64(n)
		}
		for i := len(tp.leaf) - 1; i >= 0; i-- {
			if tp.leaf[i] != nil {
				last = rename(nil, tp.leaf[i], k)
				break
			}
		}
		copies++
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return copies
}

// peakHeap runs fn and returns the highest heap in use above the level
// before it, sampled every millisecond, and the live heap after it while
// the result is still referenced.
func peakHeap(fn func() any) (peak, live uint64, elapsed time.Duration) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var top atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > top.Load() {
				top.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	start := time.Now()
	keep := fn()
	elapsed = time.Since(start)
	close(stop)
	<-done
	runtime.GC()
	runtime.ReadMemStats(&ms)
	live = ms.HeapAlloc - min(base, ms.HeapAlloc)
	runtime.KeepAlive(keep)
	return top.Load() - min(base, top.Load()), live, elapsed
}

// TestDecodeMemory decodes a 100 MB file of repeated sessions with a lean
// decode and checks that the heap stays far below the file size.
func TestDecodeMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("generates a 100 MB file")
	}
	for _, chained := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "big.jsonl")
		fh, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		copies := bigSession(t, fh, 100<<20, chained)
		fh.Close()
		var tr *trajectory.Trajectory
		peak, live, took := peakHeap(func() any {
			fh, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			tr, err = New().Decode(fh, trajectory.Options{SkipObservationContent: true})
			if err != nil {
				t.Fatal(err)
			}
			return tr
		})
		t.Logf("chained=%v copies=%d steps=%d: peak heap %.1f MB, live %.1f MB, %v",
			chained, copies, len(tr.Steps()), float64(peak)/(1<<20), float64(live)/(1<<20), took)
		if peak > 40<<20 {
			t.Errorf("peak heap %.1f MB for a 100 MB file", float64(peak)/(1<<20))
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	var buf bytes.Buffer
	bigSession(b, &buf, 20<<20, true)
	data := buf.Bytes()
	b.Run("bufio-baseline", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			sc := bufio.NewReaderSize(bytes.NewReader(data), 256<<10)
			for {
				if _, err := sc.ReadSlice('\n'); err == io.EOF {
					break
				}
			}
		}
	})
	b.Run("jsonl-reader", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			r := jsonl.NewReader(bytes.NewReader(data))
			for r.Next() {
			}
			if r.Err() != nil {
				b.Fatal(r.Err())
			}
		}
	})
	for _, skip := range []bool{false, true} {
		b.Run(fmt.Sprintf("decode-skip=%v", skip), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := New().Decode(bytes.NewReader(data), trajectory.Options{SkipObservationContent: skip}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
