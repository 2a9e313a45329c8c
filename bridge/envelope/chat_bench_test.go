package envelope

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/bridge"
)

// BenchmarkChatCheck measures a whole Check of a resumed OpenCode and Pi
// request (the last recorded one plus the nonce) against a baseline taken in
// the same loop: json.Valid over the same body. The ratio is the envelope's
// cost in units of one validating pass.
func BenchmarkChatCheck(b *testing.B) {
	for _, name := range []string{"opencode", "pi"} {
		a := loadChat(b, name)
		rec := a.requests[len(a.requests)-1]
		msgs := messages(rec)
		prefix := a.prefix[:len(msgs)-1]
		body := withMessages(b, rec, append(append([]string{}, msgs...), a.nonceMsg))
		// Large tool outputs: every message's content grows by 256 KiB.
		pad := strings.Repeat("x", 256<<10)
		bigPrefix := make([]json.RawMessage, len(prefix))
		for i, p := range prefix {
			bigPrefix[i] = json.RawMessage(strings.Replace(string(p), `"content":"`, `"content":"`+pad, 1))
		}
		bigMsgs := messages(body)
		for i := 1; i < len(bigMsgs)-1; i++ {
			bigMsgs[i] = string(bigPrefix[i-1])
		}
		bigBody := withMessages(b, body, bigMsgs)
		for _, bc := range []struct {
			name   string
			prefix []json.RawMessage
			body   []byte
		}{{"recorded", prefix, body}, {"large-outputs", bigPrefix, bigBody}} {
			b.Run(name+"/"+bc.name, func(b *testing.B) {
				var c bridge.Conversation
				var err error
				if name == "opencode" {
					c, err = NewOpenCode(bc.prefix, Options{Nonce: nonce})
				} else {
					c, err = NewPi(bc.prefix, Options{Nonce: nonce})
				}
				if err != nil {
					b.Fatal(err)
				}
				req := &bridge.Request{Route: bridge.RouteChat, Body: bc.body}
				var check, base time.Duration
				b.SetBytes(int64(len(bc.body)))
				for b.Loop() {
					t0 := time.Now()
					if !json.Valid(bc.body) {
						b.Fatal("invalid body")
					}
					t1 := time.Now()
					if _, err := c.Check(context.Background(), req); err != nil {
						b.Fatal(err)
					}
					base, check = base+t1.Sub(t0), check+time.Since(t1)
				}
				b.ReportMetric(float64(check)/float64(base), "x_json_valid")
			})
		}
	}
}
