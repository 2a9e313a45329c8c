package bridge

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestStreamsAreByteExact sends the same request to one fake model directly and to
// an identical one through the bridge: the client must get the same status, the same
// relevant headers and exactly the same body bytes.
func TestStreamsAreByteExact(t *testing.T) {
	for _, p := range protocols {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", p, stream), func(t *testing.T) {
				_, direct := newFake(t)
				_, behind := newFake(t)
				s := startBridge(t, Options{Upstream: newUpstream(t, p, behind)})

				body := requestBody(p, stream)
				dr, err := http.NewRequest(http.MethodPost, direct+pathFor(p), strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				wantRes, want := do(t, dr)
				gotRes, got := do(t, newReq(t, s, http.MethodPost, pathFor(p), body))

				if gotRes.StatusCode != wantRes.StatusCode {
					t.Fatalf("status %d through the bridge, %d direct", gotRes.StatusCode, wantRes.StatusCode)
				}
				for _, h := range []string{"Content-Type", "Request-Id", "X-Request-Id", "Cache-Control"} {
					if g, w := gotRes.Header.Get(h), wantRes.Header.Get(h); g != w {
						t.Errorf("header %s = %q through the bridge, %q direct", h, g, w)
					}
				}
				if !bytes.Equal(got, want) {
					t.Errorf("body differs (-direct +bridge):\n%s", cmp.Diff(string(want), string(got)))
				}
				if stream && !bytes.Contains(got, []byte("data: ")) {
					t.Errorf("expected an SSE stream, got %q", got)
				}
			})
		}
	}
}

// TestEdgeCaseStreamIsByteExact relays a stream full of shapes proxies mangle,
// written in random-sized pieces, and a gzip body the upstream compressed anyway.
func TestEdgeCaseStreamIsByteExact(t *testing.T) {
	golden, err := os.ReadFile("testdata/edge-cases.sse")
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(golden)
	_ = zw.Close()

	for _, tc := range []struct {
		name     string
		body     []byte
		encoding string
	}{
		{"sse-random-chunks", golden, ""},
		{"gzip-despite-identity", gz.Bytes(), "gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			up := handlerUpstream(t, Anthropic, func(w http.ResponseWriter, r *http.Request) {
				if ae := r.Header.Get("Accept-Encoding"); ae != "identity" {
					t.Errorf("upstream got Accept-Encoding %q, want identity", ae)
				}
				w.Header().Set("Content-Type", "text/event-stream")
				if tc.encoding != "" {
					w.Header().Set("Content-Encoding", tc.encoding)
				}
				rc := http.NewResponseController(w)
				for b := tc.body; len(b) > 0; {
					n := min(len(b), 1+rng.IntN(3000))
					_, _ = w.Write(b[:n])
					_ = rc.Flush()
					b = b[n:]
				}
			})
			s := startBridge(t, Options{Upstream: up})
			res, got := do(t, newReq(t, s, http.MethodPost, "/v1/messages", requestBody(Anthropic, true)))
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, got)
			}
			if !bytes.Equal(got, tc.body) {
				t.Fatalf("client got %d bytes, upstream sent %d; first difference at %d",
					len(got), len(tc.body), firstDiff(got, tc.body))
			}
			if ce := res.Header.Get("Content-Encoding"); ce != tc.encoding {
				t.Errorf("Content-Encoding %q, want %q", ce, tc.encoding)
			}
			s.Close()
			if rec := s.Records()[0]; rec.ResponseBytes != int64(len(tc.body)) || rec.Outcome != OutcomeForwarded {
				t.Errorf("record: %d bytes, outcome %s", rec.ResponseBytes, rec.Outcome)
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// blockingUpstream writes one event, then blocks until release is closed or the
// request ends, and reports which came first.
func blockingUpstream(t *testing.T, release <-chan struct{}, ended chan<- error) *HTTPUpstream {
	return handlerUpstream(t, Responses, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: response.created\ndata: {\"type\":\"response.created\"}\n\n")
		_ = http.NewResponseController(w).Flush()
		select {
		case <-release:
			_, _ = io.WriteString(w, "event: response.completed\ndata: {\"type\":\"response.completed\"}\n\n")
			ended <- nil
		case <-r.Context().Done():
			ended <- r.Context().Err()
		case <-time.After(10 * time.Second):
			ended <- errors.New("upstream was neither released nor cancelled")
		}
	})
}

// readEvent reads one SSE event (up to the blank line) or fails after a timeout.
func readEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		var ev strings.Builder
		for {
			line, err := br.ReadString('\n')
			ev.WriteString(line)
			if err != nil || line == "\n" {
				got <- ev.String()
				return
			}
		}
	}()
	select {
	case ev := <-got:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("the first event did not reach the client while the upstream was still streaming: something buffers")
		return ""
	}
}

func TestFirstEventArrivesBeforeUpstreamFinishes(t *testing.T) {
	release, ended := make(chan struct{}), make(chan error, 1)
	s := startBridge(t, Options{Upstream: blockingUpstream(t, release, ended)})
	res, err := client().Do(newReq(t, s, http.MethodPost, "/v1/responses", requestBody(Responses, true)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	if ev := readEvent(t, br); !strings.HasPrefix(ev, "event: response.created\n") {
		t.Fatalf("first event %q", ev)
	}
	close(release)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if want := "event: response.completed\ndata: {\"type\":\"response.completed\"}\n\n"; string(rest) != want {
		t.Errorf("rest of stream %q, want %q", rest, want)
	}
	if err := <-ended; err != nil {
		t.Errorf("upstream: %v", err)
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	release, ended := make(chan struct{}), make(chan error, 1)
	s := startBridge(t, Options{Upstream: blockingUpstream(t, release, ended)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := client().Do(newReq(t, s, http.MethodPost, "/v1/responses", requestBody(Responses, true)).WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	readEvent(t, bufio.NewReader(res.Body))
	cancel()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("upstream request ended with %v, want its context cancelled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request was not cancelled after the client went away")
	}
	s.Close()
	if rec := s.Records()[0]; rec.Outcome != OutcomeCanceled {
		t.Errorf("outcome %s, want %s", rec.Outcome, OutcomeCanceled)
	}
	if f := s.Stats().LastFailure; f != nil {
		t.Errorf("a client disconnect counted as an upstream failure: %+v", f)
	}
}

// TestClientLeavingAfterLastEvent: an agent may close its connection the moment
// the stream's last event is in, before the upstream's own end reaches the
// bridge (here the upstream never ends). The answer reached it in full, so
// the exchange counts as forwarded; a client that leaves one event earlier
// canceled it.
func TestClientLeavingAfterLastEvent(t *testing.T) {
	for _, tc := range []struct {
		p         Protocol
		body, end string
	}{
		{Responses, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n",
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n"},
		{Anthropic, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n",
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
		// [DONE] arrives cut in two reads, the way a slow socket can deliver it.
		{Chat, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n", "data: [DO|NE]\n\n"},
		// A client that stops reading at the finish_reason, before the usage chunk.
		{Chat, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n",
			"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"},
	} {
		for _, leaveEarly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%.12s/early=%v", tc.p, tc.end, leaveEarly), func(t *testing.T) {
				s := startBridge(t, Options{Upstream: handlerUpstream(t, tc.p, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/event-stream")
					rc := http.NewResponseController(w)
					for _, part := range append([]string{tc.body}, strings.Split(tc.end, "|")...) {
						_, _ = io.WriteString(w, part)
						_ = rc.Flush()
						time.Sleep(20 * time.Millisecond)
					}
					<-r.Context().Done() // the upstream's end never comes
				})})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				res, err := client().Do(newReq(t, s, http.MethodPost, pathFor(tc.p), requestBody(tc.p, true)).WithContext(ctx))
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				br := bufio.NewReader(res.Body)
				readEvent(t, br)
				if !leaveEarly {
					if ev := readEvent(t, br); ev != strings.ReplaceAll(tc.end, "|", "") {
						t.Fatalf("last event %q", ev)
					}
				}
				cancel()
				waitFor(t, func() bool { return s.Stats().Requests == 1 })
				want, forwarded := OutcomeForwarded, 1
				if leaveEarly {
					want, forwarded = OutcomeCanceled, 0
				}
				if rec := s.Records()[0]; rec.Outcome != want || s.Stats().Forwarded != forwarded {
					t.Errorf("outcome %s (forwarded %d), want %s", rec.Outcome, s.Stats().Forwarded, want)
				}
			})
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
	}
}

// TestConcurrentRequests holds every upstream request until all have arrived: a
// bridge that serialised requests would never get there.
func TestConcurrentRequests(t *testing.T) {
	const n = 4
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	up := handlerUpstream(t, Chat, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		arrived.Done()
		select {
		case <-all:
		case <-time.After(5 * time.Second):
			http.Error(w, "not all requests arrived together", http.StatusGatewayTimeout)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", body)
	})
	s := startBridge(t, Options{Upstream: up})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"model":"m","stream":true,"messages":[{"role":"user","content":"request %d"}]}`, i)
			res, got := do(t, newReq(t, s, http.MethodPost, "/v1/chat/completions", body))
			if want := "data: " + body + "\n\ndata: [DONE]\n\n"; res.StatusCode != http.StatusOK || string(got) != want {
				t.Errorf("request %d: status %d, body %q, want %q", i, res.StatusCode, got, want)
			}
		}()
	}
	wg.Wait()
	s.Close()
	seqs := map[int]bool{}
	for _, rec := range s.Records() {
		seqs[rec.Seq] = true
	}
	if len(seqs) != n || s.Stats().Forwarded != n {
		t.Errorf("records %+v, stats %+v: want %d distinct forwarded requests", s.Records(), s.Stats(), n)
	}
}

// failingWriter is a client that took n bytes and then went away.
type failingWriter struct {
	http.ResponseWriter
	n int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n <= 0 {
		return 0, errors.New("client went away")
	}
	w.n -= len(p)
	return len(p), nil
}

func (w *failingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestRelayStopsItsReader: when the client fails, relay stops the upstream
// read that is waiting (here a pipe nobody writes to any more) and returns
// only once its reader has ended, and a fast upstream's bytes arrive whole
// however the reads were batched.
func TestRelayStopsItsReader(t *testing.T) {
	for _, tc := range []struct {
		name      string
		clientCap int
		want      int64
		wantWrErr bool
	}{
		{"client stays", 1 << 30, 3 * relayBuf, false},
		{"client leaves", 1, relayBuf, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			go func() {
				for range 3 {
					if _, err := pw.Write(bytes.Repeat([]byte("x"), relayBuf)); err != nil {
						return
					}
				}
				if !tc.wantWrErr {
					pw.Close()
				}
				// Leaving the pipe open makes the reader wait for ever unless stopped.
			}()
			stopped := false
			stop := func() { stopped = true; pr.CloseWithError(context.Canceled) }
			tap := &bytes.Buffer{}
			done := make(chan struct{})
			var n int64
			var rerr, werr error
			go func() {
				defer close(done)
				n, rerr, werr = relay(&failingWriter{ResponseWriter: nopResponse{}, n: tc.clientCap}, pr, stop, tap, nil)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("relay did not return")
			}
			if n != tc.want || (werr != nil) != tc.wantWrErr || rerr != nil || stopped != tc.wantWrErr {
				t.Fatalf("relay = %d, %v, %v (stopped %v); want %d bytes, write error %v", n, rerr, werr, stopped, tc.want, tc.wantWrErr)
			}
			if !tc.wantWrErr && int64(tap.Len()) != tc.want {
				t.Errorf("the tap saw %d bytes, want %d", tap.Len(), tc.want)
			}
		})
	}
}

// nopResponse is a ResponseWriter whose Flush works and sends nowhere.
type nopResponse struct{}

func (nopResponse) Header() http.Header         { return http.Header{} }
func (nopResponse) Write(p []byte) (int, error) { return len(p), nil }
func (nopResponse) WriteHeader(int)             {}
func (nopResponse) Flush()                      {}
