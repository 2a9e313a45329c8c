package bridge

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Each benchmark measures the bridge against its own baseline in the same run and
// the same loop: every iteration makes one request directly to the upstream and one
// through the bridge, so machine noise hits both alike.

// benchPair is an upstream server, a bridge in front of it, and a keep-alive client
// for each path (the CLIs keep their connection too).
//
// The throughput benchmarks also time a third path, "hop": the same upstream
// behind a bare TCP forwarder (io.Copy between TCP connections, which Linux
// does with splice(2): no parsing, no user-space copy). It is the cheapest any
// loopback proxy can be, so its ratio is the ceiling for the bridge's on the
// machine at hand: on a CPU-bound host, the extra TCP connection costs about
// as much as the direct exchange itself, whatever the proxy does with the bytes.
type benchPair struct {
	direct, bridged, hop string
	token                string
	dc, bc, hc           *http.Client
}

func newBenchPair(b *testing.B, p Protocol, h http.HandlerFunc) *benchPair {
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	s := startBridge(b, Options{Upstream: newUpstream(b, p, srv.URL)})
	tr := func() *http.Client {
		t := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4}
		b.Cleanup(t.CloseIdleConnections)
		return &http.Client{Transport: t}
	}
	hop := "http://" + tcpForwarder(b, srv.Listener.Addr().String()) + pathFor(p)
	return &benchPair{direct: srv.URL + pathFor(p), bridged: s.URL() + pathFor(p), hop: hop, token: s.Token(),
		dc: tr(), bc: tr(), hc: tr()}
}

// tcpForwarder listens on loopback and pipes every connection to upstream.
func tcpForwarder(b *testing.B, upstream string) string {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	b.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp4", upstream)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, u)
			mu.Unlock()
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				_ = dst.(*net.TCPConn).CloseWrite()
			}
			wg.Go(func() { pipe(u, c) })
			wg.Go(func() { pipe(c, u) })
		}
	})
	return ln.Addr().String()
}

// via names the path a benchmark request takes.
type via string

const (
	viaDirect via = "direct"
	viaBridge via = "bridge"
	viaHop    via = "hop"
)

// timeRequest posts body and returns the time to the first body byte and to the
// end of the body.
func (bp *benchPair) timeRequest(b *testing.B, v via, body string, buf []byte) (first, total time.Duration, n int64) {
	url, c := bp.direct, bp.dc
	switch v {
	case viaBridge:
		url, c = bp.bridged, bp.bc
	case viaHop:
		url, c = bp.hop, bp.hc
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", bp.token)
	start := time.Now()
	res, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	m, err := io.ReadAtLeast(res.Body, buf[:1], 1)
	first = time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	rest, err := io.CopyBuffer(io.Discard, res.Body, buf)
	if err != nil {
		b.Fatalf("%s: after %d bytes: %v", v, int64(m)+rest, err)
	}
	if res.StatusCode != http.StatusOK {
		b.Fatalf("status %d", res.StatusCode)
	}
	return first, time.Since(start), int64(m) + rest
}

// cpuTime is the CPU time (user + system) the whole test process has used: the
// upstream, the bridge and the client all run in it.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func p50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkTimeToFirstByte: an upstream that answers at once with one short event
// followed by a few more; the metric is the median extra delay the bridge adds
// before the client sees the first byte (target ≤ 1 ms). The requests are a
// small one and one of 256 KiB, the size of an agent's request a few turns in
// (system prompt, tool schemas, history), which the bridge reads, checks and
// records before anything goes upstream.
func BenchmarkTimeToFirstByte(b *testing.B) {
	events := []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"hi\"}}\n\n",
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
	}
	small := requestBody(Anthropic, true)
	for _, tc := range []struct{ name, body string }{
		{"small-request", small},
		{"request-256KiB", strings.Replace(small, "list files", strings.Repeat("list files ", 256<<10/11), 1)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			bp := newBenchPair(b, Anthropic, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				rc := http.NewResponseController(w)
				for _, ev := range events {
					_, _ = io.WriteString(w, ev)
					_ = rc.Flush()
				}
			})
			buf := make([]byte, 32<<10)
			var direct, bridged []time.Duration
			b.ResetTimer()
			for b.Loop() {
				d, _, _ := bp.timeRequest(b, viaDirect, tc.body, buf)
				br, _, _ := bp.timeRequest(b, viaBridge, tc.body, buf)
				direct, bridged = append(direct, d), append(bridged, br)
			}
			b.StopTimer()
			dp, bp50 := p50(direct), p50(bridged)
			b.ReportMetric(float64(dp.Microseconds()), "direct-p50-µs")
			b.ReportMetric(float64(bp50.Microseconds()), "bridge-p50-µs")
			b.ReportMetric(float64((bp50 - dp).Microseconds()), "added-p50-µs")
		})
	}
}

// BenchmarkStreamThroughput relays 10 MB, written by the upstream as SSE events
// flushed one by one (the way providers stream) or as large writes; the ratio is
// bridge throughput over direct throughput (target ≥ 0.95). CPU time per request
// is reported too: on a small machine the bridge's extra hop (one more socket
// receive and send of every byte) competes with the upstream and the client for the
// same cores, which is what bounds the bulk ratio.
func BenchmarkStreamThroughput(b *testing.B) {
	const total = 10 << 20
	for _, tc := range []struct {
		name  string
		chunk int
	}{
		{"sse-events-1KiB", 1 << 10},
		{"writes-32KiB", 32 << 10},
	} {
		b.Run(tc.name, func(b *testing.B) {
			bp := newBenchPair(b, Anthropic, streamer(nil, sseEvent(tc.chunk), total, 0))
			body := requestBody(Anthropic, true)
			buf := make([]byte, 32<<10)
			var direct, bridged, hop, cpuDirect, cpuBridged, cpuHop time.Duration
			var bytesDirect, bytesBridged, bytesHop int64
			b.SetBytes(3 * total)
			b.ResetTimer()
			for b.Loop() {
				c0 := cpuTime(b)
				_, d, n := bp.timeRequest(b, viaDirect, body, buf)
				c1 := cpuTime(b)
				_, br, m := bp.timeRequest(b, viaBridge, body, buf)
				c2 := cpuTime(b)
				_, h, k := bp.timeRequest(b, viaHop, body, buf)
				c3 := cpuTime(b)
				direct, bridged, hop = direct+d, bridged+br, hop+h
				cpuDirect, cpuBridged, cpuHop = cpuDirect+c1-c0, cpuBridged+c2-c1, cpuHop+c3-c2
				bytesDirect, bytesBridged, bytesHop = bytesDirect+n, bytesBridged+m, bytesHop+k
			}
			b.StopTimer()
			if bytesDirect != bytesBridged || bytesDirect != bytesHop {
				b.Fatalf("direct read %d bytes, bridged %d, hop %d", bytesDirect, bytesBridged, bytesHop)
			}
			b.ReportMetric(direct.Seconds()/hop.Seconds(), "hop-ratio")
			b.ReportMetric(cpuDirect.Seconds()/cpuHop.Seconds(), "hop-cpu-ratio")
			mbps := func(n int64, d time.Duration) float64 { return float64(n) / d.Seconds() / 1e6 }
			b.ReportMetric(mbps(bytesDirect, direct), "direct-MB/s")
			b.ReportMetric(mbps(bytesBridged, bridged), "bridge-MB/s")
			b.ReportMetric(direct.Seconds()/bridged.Seconds(), "ratio")
			b.ReportMetric(cpuDirect.Seconds()/cpuBridged.Seconds(), "cpu-ratio")
			ops := float64(b.N)
			b.ReportMetric(cpuDirect.Seconds()*1e3/ops, "direct-cpu-ms/op")
			b.ReportMetric(cpuBridged.Seconds()*1e3/ops, "bridge-cpu-ms/op")
		})
	}
}

// BenchmarkConcurrentStreams: 16 clients stream at once, all directly and then all
// through one bridge. "bulk" sends each 1 MB in 32 KiB flushed writes and reports
// the aggregate throughput ratio (target ≥ 0.9). "paced" streams the way a model
// does, a first event at once and then a small event every millisecond, and
// reports the median time to first byte per stream on each path and their
// difference (target ≤ 1 ms added); bulk streams saturate the CPU, so their first
// bytes measure the scheduler rather than the bridge.
func BenchmarkConcurrentStreams(b *testing.B) {
	const streams = 16
	first := []byte("event: message_start\ndata: {\"type\":\"message_start\"}\n\n")
	for _, tc := range []struct {
		name   string
		total  int
		chunk  int
		pause  time.Duration
		metric string
	}{
		{"bulk", 1 << 20, 32 << 10, 0, "throughput"},
		{"paced", 20 << 10, 1 << 10, time.Millisecond, "ttfb"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			bp := newBenchPair(b, Anthropic, streamer(first, sseEvent(tc.chunk), tc.total, tc.pause))
			for _, c := range []*http.Client{bp.dc, bp.bc, bp.hc} {
				c.Transport.(*http.Transport).MaxIdleConnsPerHost = streams
			}
			body := requestBody(Anthropic, true)
			bufs := make([][]byte, streams)
			for i := range bufs {
				bufs[i] = make([]byte, 32<<10)
			}
			// round runs the streams at once and returns the wall time, the bytes
			// and every stream's time to first byte.
			round := func(v via) (wall time.Duration, n int64, ttfb []time.Duration) {
				var wg sync.WaitGroup
				var mu sync.Mutex
				start := time.Now()
				for i := range streams {
					wg.Go(func() {
						f, _, m := bp.timeRequest(b, v, body, bufs[i])
						mu.Lock()
						ttfb, n = append(ttfb, f), n+m
						mu.Unlock()
					})
				}
				wg.Wait()
				return time.Since(start), n, ttfb
			}
			var wallD, wallB, wallH, cpuD, cpuB, cpuH time.Duration
			var nD, nB, nH int64
			var ttfbD, ttfbB []time.Duration
			bulk := tc.metric == "throughput"
			paths := int64(2)
			if bulk {
				paths = 3
			}
			b.SetBytes(paths * streams * int64(tc.total))
			b.ResetTimer()
			for b.Loop() {
				c0 := cpuTime(b)
				w, n, t := round(viaDirect)
				c1 := cpuTime(b)
				wallD, nD, ttfbD, cpuD = wallD+w, nD+n, append(ttfbD, t...), cpuD+c1-c0
				w, n, t = round(viaBridge)
				c2 := cpuTime(b)
				wallB, nB, ttfbB, cpuB = wallB+w, nB+n, append(ttfbB, t...), cpuB+c2-c1
				if bulk {
					w, n, _ = round(viaHop)
					wallH, nH, cpuH = wallH+w, nH+n, cpuH+cpuTime(b)-c2
				}
			}
			b.StopTimer()
			if nD != nB || (bulk && nD != nH) {
				b.Fatalf("direct read %d bytes, bridged %d, hop %d", nD, nB, nH)
			}
			if bulk {
				b.ReportMetric(wallD.Seconds()/wallH.Seconds(), "hop-ratio")
				b.ReportMetric(cpuD.Seconds()/cpuH.Seconds(), "hop-cpu-ratio")
				b.ReportMetric(float64(nD)/wallD.Seconds()/1e6, "direct-MB/s")
				b.ReportMetric(float64(nB)/wallB.Seconds()/1e6, "bridge-MB/s")
				b.ReportMetric(wallD.Seconds()/wallB.Seconds(), "ratio")
				b.ReportMetric(cpuD.Seconds()/cpuB.Seconds(), "cpu-ratio")
				return
			}
			dp, brp := p50(ttfbD), p50(ttfbB)
			b.ReportMetric(float64(dp.Microseconds()), "direct-ttfb-p50-µs")
			b.ReportMetric(float64(brp.Microseconds()), "bridge-ttfb-p50-µs")
			b.ReportMetric(float64((brp - dp).Microseconds()), "added-ttfb-p50-µs")
		})
	}
}

// sseEvent is one content_block_delta event of size bytes.
func sseEvent(size int) []byte {
	ev := append([]byte("event: content_block_delta\ndata: "), bytes.Repeat([]byte("x"), size-36)...)
	return append(ev, "\n\n"...)
}

// streamer is an upstream that sends first, then ev until total bytes are
// out, flushing each write and waiting pause before each ev.
func streamer(first, ev []byte, total int, pause time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		if first != nil {
			_, _ = w.Write(first)
			_ = rc.Flush()
		}
		for sent := len(first); sent < total; sent += len(ev) {
			if pause > 0 {
				time.Sleep(pause)
			}
			if _, err := w.Write(ev); err != nil {
				return
			}
			_ = rc.Flush()
		}
	}
}
