package agents

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/claude"
	"github.com/pvisor/pvisor/trajectory/codex"
)

// The benchmarks build a ~100 MB session by repeating a real corpus session
// with fresh ids per copy, chained so the whole file is one active branch.
const bigTarget = 100 << 20

var (
	uuidRe      = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	msgIDRe     = regexp.MustCompile(`"(msg_|toolu_|call_|req_)[A-Za-z0-9]{8,}`)
	bigOnce     sync.Map
	sessionRe   = regexp.MustCompile(`"sessionId":"[^"]*"`)
	uuidFieldRe = regexp.MustCompile(`"uuid":"([^"]+)"`)
	// claudeVersionRe is the CLI release on every Claude entry.
	claudeVersionRe = regexp.MustCompile(`"version":"[0-9][0-9.]*"`)
)

// bigClaude repeats a Claude session; copy k's root (its first entry with
// a null parentUuid: not line 0 in 2.1.x recordings, which open with
// queue-operation lines) is re-parented onto the last entry of copy k-1.
// Copy k's uuids end in k, in hex.
func bigClaude(tb testing.TB, src string, size int64) string {
	return bigFile(tb, "claude-"+filepath.Base(src), src, size, func(w *bufio.Writer, lines []string, k int, prevLast string) string {
		last := prevLast
		linked := false
		for _, l := range lines {
			if l == "" {
				continue
			}
			sid := sessionRe.FindString(l)
			// Still canonical UUIDs, as Claude Code writes them.
			l = uuidRe.ReplaceAllStringFunc(l, func(u string) string { return fmt.Sprintf("%s%06x", u[:30], k) })
			l = msgIDRe.ReplaceAllStringFunc(l, func(m string) string { return fmt.Sprintf("%s%06d", m, k) })
			if sid != "" {
				l = sessionRe.ReplaceAllString(l, sid)
			}
			if !linked && k > 0 && strings.Contains(l, `"parentUuid":null`) && prevLast != "" {
				l = strings.Replace(l, `"parentUuid":null`, `"parentUuid":"`+prevLast+`"`, 1)
				linked = true
			}
			if m := uuidFieldRe.FindStringSubmatch(l); m != nil && !strings.Contains(l, `"isSidechain":true`) {
				last = m[1]
			}
			w.WriteString(l)
			w.WriteByte('\n')
		}
		return last
	})
}

// bigClaudePinned is bigClaude of src with every "version" set to 2.1.220,
// the one Claude release pVisor 0.3.1 accepts.
func bigClaudePinned(tb testing.TB, src string, size int64) string {
	data, err := os.ReadFile(src)
	if err != nil {
		tb.Skipf("sample %s: %v", src, err)
	}
	pinned := filepath.Join(tb.TempDir(), "pinned-"+filepath.Base(src))
	data = claudeVersionRe.ReplaceAll(data, []byte(`"version":"2.1.220"`))
	if err := os.WriteFile(pinned, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	return bigClaude(tb, pinned, size)
}

// bigPiEvents repeats a `pi --mode json` stream that has no session header.
func bigPiEvents(tb testing.TB, src string, size int64) string {
	return bigRepeat(tb, "pi-events-"+filepath.Base(src), src, size, false)
}

// bigCodex repeats the response items of a rollout after one session_meta.
func bigCodex(tb testing.TB, src string, size int64) string {
	return bigFile(tb, "codex", src, size, func(w *bufio.Writer, lines []string, k int, _ string) string {
		for _, l := range lines {
			if l == "" || (k > 0 && strings.Contains(l, `"type":"session_meta"`)) {
				continue
			}
			l = msgIDRe.ReplaceAllStringFunc(l, func(m string) string { return fmt.Sprintf("%s%06d", m, k) })
			w.WriteString(l)
			w.WriteByte('\n')
		}
		return ""
	})
}

// bigPi repeats a Pi session's entries after its one header line.
func bigPi(tb testing.TB, src string, size int64) string {
	return bigRepeat(tb, "pi-"+filepath.Base(src), src, size, true)
}

// bigOpenCode repeats an OpenCode run-event stream.
func bigOpenCode(tb testing.TB, src string, size int64) string {
	return bigRepeat(tb, "opencode", src, size, false)
}

// bigRepeat repeats a file's lines unchanged, its first line only once when
// it is a header.
func bigRepeat(tb testing.TB, name, src string, size int64, header bool) string {
	return bigFile(tb, name, src, size, func(w *bufio.Writer, lines []string, k int, _ string) string {
		for i, l := range lines {
			if l == "" || (header && k > 0 && i == 0) {
				continue
			}
			w.WriteString(l)
			w.WriteByte('\n')
		}
		return ""
	})
}

func bigFile(tb testing.TB, name, src string, size int64, emit func(*bufio.Writer, []string, int, string) string) string {
	name = fmt.Sprintf("%s-%d", name, size)
	if p, ok := bigOnce.Load(name); ok {
		return p.(string)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		tb.Skipf("sample %s: %v", src, err)
	}
	lines := strings.Split(string(data), "\n")
	dir, err := os.MkdirTemp("", "pvisor-bench-")
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, name+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	last := ""
	for k := 0; int64(k)*int64(len(data)) < size; k++ {
		last = emit(w, lines, k, last)
	}
	w.Flush()
	f.Close()
	bigOnce.Store(name, path)
	return path
}

// peakHeap samples the heap while fn runs.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	fn()
	close(done)
	return peak.Load()
}

func benchDecode(b *testing.B, agent, path string) {
	format, ok := Lookup(agent)
	if !ok {
		b.Skipf("%s not registered", agent)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("bufio-baseline", func(b *testing.B) {
		b.SetBytes(st.Size())
		for i := 0; i < b.N; i++ {
			f, _ := os.Open(path)
			r := bufio.NewReaderSize(f, 256<<10)
			n := 0
			for {
				_, err := r.ReadSlice('\n')
				if err == io.EOF {
					break
				}
				n++
			}
			f.Close()
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(st.Size())
		var peak uint64
		for i := 0; i < b.N; i++ {
			p := peakHeap(func() {
				f, _ := os.Open(path)
				t, err := format.Decode(f, trajectory.Options{SkipObservationContent: true})
				f.Close()
				if err != nil {
					b.Fatal(err)
				}
				if len(t.Steps()) == 0 {
					b.Fatal("no steps decoded")
				}
			})
			peak = max(peak, p)
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	})
}

func BenchmarkDecodeClaude100MB(b *testing.B) {
	benchDecode(b, claude.AgentName, bigClaude(b, claudeSample, bigTarget))
}

func BenchmarkDecodeCodex100MB(b *testing.B) {
	benchDecode(b, codex.AgentName, bigCodex(b, codexSample, bigTarget))
}

const (
	claudeSample   = "../../testdata/trajectories/claude-code/ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
	codexSample    = "../../testdata/trajectories/codex/codemie_rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
	piSample       = "../../testdata/trajectories/pi/pimono_before-compaction.jsonl"
	piEventsSample = "../../testdata/e2e/sessions/pi@1.6.0/stdout.jsonl"                                          // `pi --mode json`, its header once
	piTakopiSample = "../../testdata/trajectories/pi/takopi_pi_print_mode_events.jsonl"                           // `pi --mode json` without a header
	claudeRecorded = "../../testdata/e2e/sessions/claude-code@2.1.332/d0465159-22d9-4f2c-b1b3-3d55774e8b6c.jsonl" // 2.1.x: sourceToolAssistantUUID on results
	openCodeSample = "../opencode/testdata/ortus_run_session2.jsonl"
)

func TestMain(m *testing.M) {
	code := m.Run()
	bigOnce.Range(func(_, p any) bool {
		os.RemoveAll(filepath.Dir(p.(string)))
		return true
	})
	os.Exit(code)
}
