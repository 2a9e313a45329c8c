// Package chattest is the test harness every Chat Completions agent's
// envelope runs on its own recorded session (testdata/e2e/sessions): each
// agent's folder loads its recording with its projection and calls the
// checks here, so the rules every such envelope must keep are written once.
package chattest

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
)

// Nonce is the resume nonce the recorded requests are checked with.
const Nonce = "__PVISOR_NATIVE_REPLAY_0123456789abcdef0123456789abcdef__"

// Session is one agent's recorded session and its envelope.
type Session struct {
	Name     string
	Prefix   []json.RawMessage // projection of the whole recorded session
	Requests [][]byte          // the main request bodies the real CLI sent
	NonceMsg string            // the nonce message as the CLI sends it
	// New builds the agent's envelope; Prompt is its boundary prompt message.
	New    func(prefix []json.RawMessage, opts envelope.Options) (*envelope.Chat, error)
	Prompt func(p string) string
}

// Strip runs the agent's envelope over one body.
func (s Session) Strip(body []byte, prefix []json.RawMessage, nonce, prompt string) ([]byte, *envelope.ChatSplit, error) {
	c, err := s.New(prefix, envelope.Options{Nonce: nonce, Prompt: prompt})
	if err != nil {
		return nil, nil, err
	}
	return c.Strip(body)
}

// Recording is the directory of the newest recorded session of agent under
// the repository's testdata/e2e/sessions, from a package two levels down.
func Recording(t testing.TB, agent string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join("../../testdata/e2e/sessions", agent+"@*"))
	if len(dirs) == 0 {
		t.Fatalf("no recorded %s session under testdata/e2e/sessions", agent)
	}
	return dirs[0]
}

// Requests reads the main requests of a recording's requests.jsonl.gz.
func Requests(t testing.TB, dir string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "requests.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if gjson.GetBytes(sc.Bytes(), "kind").Str == "main" {
			out = append(out, []byte(gjson.GetBytes(sc.Bytes(), "body").Raw))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// WithMessages replaces the messages of body.
func WithMessages(t testing.TB, body []byte, msgs []string) []byte {
	t.Helper()
	v := gjson.GetBytes(body, "messages")
	if v.Index <= 0 {
		t.Fatalf("no messages in %.80s", body)
	}
	out := append([]byte{}, body[:v.Index]...)
	out = append(out, "["+strings.Join(msgs, ",")+"]"...)
	return append(out, body[v.Index+len(v.Raw):]...)
}

// Messages lists the messages of body.
func Messages(body []byte) []string {
	var out []string
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		out = append(out, m.Raw)
	}
	return out
}

// SessionMessages are the messages of every main request the real CLI sent
// while recording dir, each without its first (system) message: that one is
// the launch's, not the session's.
func SessionMessages(t testing.TB, dir string) [][]string {
	t.Helper()
	var out [][]string
	for _, body := range Requests(t, dir) {
		msgs := Messages(body)
		if len(msgs) > 0 {
			msgs = msgs[1:]
		}
		out = append(out, msgs)
	}
	return out
}

// RawStrings are items as strings, for diffs.
func RawStrings(items []json.RawMessage) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}

// StripRecorded cuts the recorded session after every step: the request
// the CLI sent there, with the nonce appended (request 1 of a resume) and
// with a continuation after it (a later request), is forwarded exactly as
// recorded, continuation kept.
func StripRecorded(t *testing.T, s Session) {
	for i, rec := range s.Requests[1:] {
		msgs := Messages(rec)
		prefix := s.Prefix[:len(msgs)-1]
		t.Run(fmt.Sprintf("step-%d/boundary", i+1), func(t *testing.T) {
			body := WithMessages(t, rec, append(append([]string{}, msgs...), s.NonceMsg))
			fwd, sp, err := s.Strip(body, prefix, Nonce, "")
			if err != nil {
				t.Fatal(err)
			}
			if string(fwd) != string(rec) || sp.Nonce != len(msgs) || len(sp.Live) != 0 {
				t.Errorf("step %d: forwarded body differs from the recorded request (nonce at %d)", i+1, sp.Nonce)
			}
		})
		t.Run(fmt.Sprintf("step-%d/later", i+1), func(t *testing.T) {
			cont := []string{`{"role":"assistant","content":"x","tool_calls":[{"id":"c9","type":"function","function":{"name":"bash","arguments":"{}"}}]}`,
				`{"role":"tool","tool_call_id":"c9","content":"y"}`}
			body := WithMessages(t, rec, append(append(append([]string{}, msgs...), s.NonceMsg), cont...))
			fwd, sp, err := s.Strip(body, prefix, Nonce, "P")
			if err != nil {
				t.Fatal(err)
			}
			want := append(append(append([]string{}, msgs...), s.Prompt("P")), cont...)
			turns := 0
			for _, m := range sp.Live {
				if gjson.GetBytes(m, "role").Str == "assistant" {
					turns++
				}
			}
			if d := cmp.Diff(want, Messages(fwd)); d != "" || len(sp.Live) != 2 || turns != 1 {
				t.Errorf("step %d (-want +forwarded):\n%s", i+1, d)
			}
		})
	}
}

// Refusals: every way a request can leave the recorded conversation is
// refused with a reason that says where.
func Refusals(t *testing.T, s Session) {
	rec := s.Requests[2]
	msgs := Messages(rec)
	prefix := s.Prefix[:len(msgs)-1]
	tampered := append([]string{}, msgs...)
	tampered[len(tampered)-1] = strings.Replace(tampered[len(tampered)-1], `"content":"`, `"content":"X`, 1)
	for _, tc := range []struct {
		name string
		msgs []string
		want string
	}{
		{"no nonce", msgs, "no resume nonce"},
		{"twice", append(append(append([]string{}, msgs...), s.NonceMsg), s.NonceMsg), "appears as messages"},
		{"tampered", append(tampered, s.NonceMsg), "differs from message"},
		{"short", append(append([]string{}, msgs[:len(msgs)-1]...), s.NonceMsg), "ends before the boundary"},
		{"inserted", append(append(append([]string{}, msgs...), `{"role":"user","content":"hi"}`), s.NonceMsg), "sits between"},
		{"no system", append(append([]string{}, msgs[1:]...), s.NonceMsg), "system message"},
		{"nonce in text", append(append(append([]string{}, msgs...), s.NonceMsg), `{"role":"assistant","content":"`+Nonce+`"}`), "appears 2 times"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := s.Strip(WithMessages(t, rec, tc.msgs), prefix, Nonce, "")
			var r *bridge.Refusal
			if !errors.As(err, &r) || !strings.Contains(r.Reason, tc.want) {
				t.Errorf("err = %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}

// Budget: the live-turn budget fires once, on the first request past it,
// and a request of another protocol is refused.
func Budget(t *testing.T, s Session) {
	rec := s.Requests[1]
	msgs := Messages(rec)
	fired := 0
	env, err := s.New(s.Prefix[:len(msgs)-1], envelope.Options{Nonce: Nonce, MaxLiveTurns: 1, OnBudget: func() { fired++ }})
	if err != nil {
		t.Fatal(err)
	}
	req := func(extra ...string) *bridge.Request {
		return &bridge.Request{Route: bridge.RouteChat, Body: WithMessages(t, rec, append(append(append([]string{}, msgs...), s.NonceMsg), extra...))}
	}
	if _, err := env.Check(context.Background(), req()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = env.Check(ctx, req(`{"role":"assistant","content":"a"}`, `{"role":"user","content":"b"}`))
	if !errors.Is(err, context.Canceled) || fired != 1 || !env.Report().BudgetExceeded {
		t.Errorf("over budget: %v fired %d", err, fired)
	}
	if _, err := env.Check(context.Background(), &bridge.Request{Route: bridge.RouteResponses, Body: rec}); err == nil {
		t.Error("a Responses request was accepted")
	}
	if r := env.Report(); r.Accepted != 1 || r.Checked != 3 {
		t.Errorf("report %+v", r)
	}
}

// Fuzz: whatever the body, the envelope either refuses or forwards valid
// JSON that no longer holds the nonce.
func Fuzz(f *testing.F, s Session) {
	rec := s.Requests[2]
	msgs := Messages(rec)
	prefix := s.Prefix[:len(msgs)-1]
	f.Add(WithMessages(f, rec, append(append([]string{}, msgs...), s.NonceMsg)))
	f.Add([]byte(`{"messages":[{"role":"user","content":"` + Nonce + `"}]}`))
	f.Add([]byte(`{"messages":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fwd, _, err := s.Strip(body, prefix, Nonce, "")
		if err != nil {
			var r *bridge.Refusal
			if !errors.As(err, &r) {
				t.Fatalf("error is not a refusal: %v", err)
			}
			return
		}
		if !gjson.ValidBytes(fwd) {
			t.Fatalf("forwarded invalid JSON: %q", fwd)
		}
		if strings.Contains(string(fwd), Nonce) {
			t.Fatalf("forwarded the nonce: %q", fwd)
		}
	})
}

// BenchmarkCheck measures a whole Check of a resumed request (the last
// recorded one plus the nonce) against a baseline taken in the same loop:
// json.Valid over the same body. The ratio is the envelope's cost in units
// of one validating pass; "large-outputs" grows every message by 256 KiB.
func BenchmarkCheck(b *testing.B, s Session) {
	rec := s.Requests[len(s.Requests)-1]
	msgs := Messages(rec)
	prefix := s.Prefix[:len(msgs)-1]
	body := WithMessages(b, rec, append(append([]string{}, msgs...), s.NonceMsg))
	pad := strings.Repeat("x", 256<<10)
	bigPrefix := make([]json.RawMessage, len(prefix))
	for i, p := range prefix {
		bigPrefix[i] = json.RawMessage(strings.Replace(string(p), `"content":"`, `"content":"`+pad, 1))
	}
	bigMsgs := Messages(body)
	for i := 1; i < len(bigMsgs)-1; i++ {
		bigMsgs[i] = string(bigPrefix[i-1])
	}
	bigBody := WithMessages(b, body, bigMsgs)
	for _, bc := range []struct {
		name   string
		prefix []json.RawMessage
		body   []byte
	}{{"recorded", prefix, body}, {"large-outputs", bigPrefix, bigBody}} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := s.New(bc.prefix, envelope.Options{Nonce: Nonce})
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
