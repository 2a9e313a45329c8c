package bridge

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestUpstreamTimeouts: a loopback service that stalls before its headers
// or in the middle of its stream is ended by the upstream's own timeouts,
// the client gets a 504 or a broken stream, and the failure names the
// timeout; a stream that is slow but never silent that long is not cut.
func TestUpstreamTimeouts(t *testing.T) {
	const d = 300 * time.Millisecond
	event := "event: message_start\ndata: {}\n\n"
	for _, tc := range []struct {
		name    string
		serve   func(w http.ResponseWriter, stop <-chan struct{})
		status  int
		timeout string // "" none
		body    string
	}{
		{"stall before headers", func(w http.ResponseWriter, stop <-chan struct{}) { <-stop }, 504, TimeoutFirstByte, ""},
		{"stall mid-stream", func(w http.ResponseWriter, stop <-chan struct{}) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, event)
			w.(http.Flusher).Flush()
			<-stop
		}, 200, TimeoutIdle, event},
		{"slow steady stream", func(w http.ResponseWriter, stop <-chan struct{}) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
			for range 5 {
				time.Sleep(d / 3)
				io.WriteString(w, event)
				w.(http.Flusher).Flush()
			}
		}, 200, "", strings.Repeat(event, 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tc.serve(w, stop)
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(stop) })
			up, err := NewHTTPUpstream(UpstreamConfig{Protocol: Anthropic, BaseURL: srv.URL, APIKey: upstreamKey,
				FirstByteTimeout: d, IdleTimeout: d})
			if err != nil {
				t.Fatal(err)
			}
			s := startBridge(t, Options{Upstream: up})
			start := time.Now()
			res, err := client().Do(newReq(t, s, http.MethodPost, "/v1/messages", requestBody(Anthropic, true)))
			if err != nil {
				t.Fatal(err)
			}
			got, readErr := io.ReadAll(res.Body)
			res.Body.Close()
			if took := time.Since(start); took > 20*d {
				t.Errorf("took %s with %s timeouts", took, d)
			}
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, got)
			}
			s.Close()
			f := s.Stats().LastFailure
			switch {
			case tc.timeout == "":
				if readErr != nil || f != nil || string(got) != tc.body {
					t.Errorf("read %q (%v), failure %+v", got, readErr, f)
				}
			case f == nil || f.Timeout != tc.timeout || f.Kind != FailureConnection:
				t.Errorf("failure %+v, want timeout %s", f, tc.timeout)
			case !strings.Contains(f.Message, d.String()):
				t.Errorf("message %q does not say %s", f.Message, d)
			case tc.status == 504:
				_, msg, _ := errorShape(t, Anthropic, got)
				if !strings.Contains(msg, "no response headers within "+d.String()) {
					t.Errorf("client error %q", msg)
				}
			case readErr == nil || string(got) != tc.body:
				t.Errorf("client read %q (err %v), want %q and a broken stream", got, readErr, tc.body)
			}
		})
	}
}

func TestUpstreamTimeoutConfig(t *testing.T) {
	for _, tc := range []struct {
		first, idle time.Duration
		wantErr     bool
	}{{0, 0, false}, {time.Second, time.Minute, false}, {-time.Second, 0, true}, {0, -1, true}} {
		t.Run(fmt.Sprint(tc.first, tc.idle), func(t *testing.T) {
			u, err := NewHTTPUpstream(UpstreamConfig{Protocol: Responses, BaseURL: "http://127.0.0.1:9/v1",
				FirstByteTimeout: tc.first, IdleTimeout: tc.idle})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if err == nil && (u.firstByte != cmp.Or(tc.first, DefaultFirstByteTimeout) || u.idle != cmp.Or(tc.idle, DefaultIdleTimeout)) {
				t.Errorf("first byte %s, idle %s", u.firstByte, u.idle)
			}
		})
	}
}
