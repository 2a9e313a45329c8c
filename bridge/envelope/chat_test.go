package envelope

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

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/trajectory/opencode"
	"github.com/pvisor/pvisor/trajectory/pi"
)

// chatAgent is one Chat Completions agent's recorded session.
type chatAgent struct {
	name     string
	prefix   []json.RawMessage // projection of the whole recorded session
	requests [][]byte          // the main request bodies the real CLI sent
	nonceMsg string            // the nonce message as the CLI sends it
	strip    func(body []byte, prefix []json.RawMessage, nonce, prompt string) ([]byte, *ChatSplit, error)
	promptAt func(p string) string
}

func loadChat(t testing.TB, name string) chatAgent {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join("../../testdata/e2e/sessions", name+"@*"))
	if len(dirs) == 0 {
		t.Fatalf("no recorded %s session under testdata/e2e/sessions", name)
	}
	dir := dirs[0]
	a := chatAgent{name: name}
	switch name {
	case "opencode":
		f, err := os.Open(filepath.Join(dir, "export.json"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		p, err := opencode.Project(f)
		if err != nil {
			t.Fatal(err)
		}
		a.prefix, a.strip, a.promptAt = p.Items, StripOpenCode, openCodePrompt
		a.nonceMsg = `{"role":"user","content":"` + nonce + `"}`
	case "pi":
		files, _ := filepath.Glob(filepath.Join(dir, "2026-*.jsonl"))
		f, err := os.Open(files[0])
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		p, err := pi.Project(f)
		if err != nil {
			t.Fatal(err)
		}
		a.prefix, a.strip, a.promptAt = p.Items, StripPi, piPrompt
		a.nonceMsg = `{"role":"user","content":[{"type":"text","text":"` + nonce + `"}]}`
	}
	f, err := os.Open(filepath.Join(dir, "requests.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if gjson.GetBytes(sc.Bytes(), "kind").Str == "main" {
			a.requests = append(a.requests, []byte(gjson.GetBytes(sc.Bytes(), "body").Raw))
		}
	}
	return a
}

// withMessages replaces the messages of body.
func withMessages(t testing.TB, body []byte, msgs []string) []byte {
	t.Helper()
	out, err := splice(body, gjson.GetBytes(body, "messages"), "["+strings.Join(msgs, ",")+"]")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func messages(body []byte) []string {
	var out []string
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		out = append(out, m.Raw)
	}
	return out
}

// TestChatStripRecorded cuts each recorded session after every step: the
// request the CLI sent there, with the nonce appended (request 1 of a
// resume) and with a continuation after it (a later request), is forwarded
// exactly as recorded, continuation kept.
func TestChatStripRecorded(t *testing.T) {
	for _, name := range []string{"opencode", "pi"} {
		a := loadChat(t, name)
		for i, rec := range a.requests[1:] {
			msgs := messages(rec)
			prefix := a.prefix[:len(msgs)-1]
			t.Run(fmt.Sprintf("%s/step-%d/boundary", name, i+1), func(t *testing.T) {
				body := withMessages(t, rec, append(append([]string{}, msgs...), a.nonceMsg))
				fwd, s, err := a.strip(body, prefix, nonce, "")
				if err != nil {
					t.Fatal(err)
				}
				if string(fwd) != string(rec) || s.Nonce != len(msgs) || len(s.Live) != 0 {
					t.Errorf("step %d: forwarded body differs from the recorded request (nonce at %d)", i+1, s.Nonce)
				}
			})
			t.Run(fmt.Sprintf("%s/step-%d/later", name, i+1), func(t *testing.T) {
				cont := []string{`{"role":"assistant","content":"x","tool_calls":[{"id":"c9","type":"function","function":{"name":"bash","arguments":"{}"}}]}`,
					`{"role":"tool","tool_call_id":"c9","content":"y"}`}
				body := withMessages(t, rec, append(append(append([]string{}, msgs...), a.nonceMsg), cont...))
				fwd, s, err := a.strip(body, prefix, nonce, "P")
				if err != nil {
					t.Fatal(err)
				}
				want := append(append(append([]string{}, msgs...), a.promptAt("P")), cont...)
				if d := cmp.Diff(want, messages(fwd)); d != "" || len(s.Live) != 2 || chatTurns(s.Live) != 1 {
					t.Errorf("step %d (-want +forwarded):\n%s", i+1, d)
				}
			})
		}
	}
}

func TestChatStripRefusals(t *testing.T) {
	for _, name := range []string{"opencode", "pi"} {
		a := loadChat(t, name)
		rec := a.requests[2]
		msgs := messages(rec)
		prefix := a.prefix[:len(msgs)-1]
		tampered := append([]string{}, msgs...)
		tampered[len(tampered)-1] = strings.Replace(tampered[len(tampered)-1], `"content":"`, `"content":"X`, 1)
		for _, tc := range []struct {
			name string
			msgs []string
			want string
		}{
			{"no nonce", msgs, "no resume nonce"},
			{"twice", append(append(append([]string{}, msgs...), a.nonceMsg), a.nonceMsg), "appears as messages"},
			{"tampered", append(tampered, a.nonceMsg), "differs from message"},
			{"short", append(append([]string{}, msgs[:len(msgs)-1]...), a.nonceMsg), "ends before the boundary"},
			{"inserted", append(append(append([]string{}, msgs...), `{"role":"user","content":"hi"}`), a.nonceMsg), "sits between"},
			{"no system", append(append([]string{}, msgs[1:]...), a.nonceMsg), "system message"},
			{"nonce in text", append(append(append([]string{}, msgs...), a.nonceMsg), `{"role":"assistant","content":"`+nonce+`"}`), "appears 2 times"},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				_, _, err := a.strip(withMessages(t, rec, tc.msgs), prefix, nonce, "")
				var r *bridge.Refusal
				if !errors.As(err, &r) || !strings.Contains(r.Reason, tc.want) {
					t.Errorf("err = %v, want a refusal saying %q", err, tc.want)
				}
			})
		}
	}
}

func TestOpenCodeQuotedNonceAndSideCall(t *testing.T) {
	a := loadChat(t, "opencode")
	rec := a.requests[1]
	msgs := messages(rec)
	prefix := a.prefix[:len(msgs)-1]
	quoted := `{"role":"user","content":"\"` + nonce + `\""}`
	fwd, _, err := StripOpenCode(withMessages(t, rec, append(append([]string{}, msgs...), quoted)), prefix, nonce, "")
	if err != nil || string(fwd) != string(rec) {
		t.Errorf("quoted nonce: %v", err)
	}
	title := `{"model":"m","messages":[{"role":"system","content":"You are a title generator."},{"role":"user","content":"Generate a title"},` + quoted + `]}`
	fwd, s, err := StripOpenCode([]byte(title), prefix, nonce, "")
	want := `{"model":"m","messages":[{"role":"system","content":"You are a title generator."},{"role":"user","content":"Generate a title"}]}`
	if err != nil || !s.Side || string(fwd) != want {
		t.Errorf("title call: %v %+v %s", err, s, fwd)
	}
	// A tool-less request that carries the conversation is checked.
	conv := withMessages(t, []byte(`{"model":"m","messages":[]}`), append(append([]string{}, msgs...), `{"role":"assistant","content":"`+nonce+`"}`))
	if _, _, err := StripOpenCode(conv, prefix, nonce, ""); err == nil {
		t.Error("a tool-less request with the conversation passed as a side call")
	}
}

func TestPiSyntheticAssistant(t *testing.T) {
	a := loadChat(t, "pi")
	rec := a.requests[3]
	msgs := messages(rec)
	body := withMessages(t, rec, append(append(append([]string{}, msgs...), PiSynthetic), a.nonceMsg))
	fwd, s, err := StripPi(body, a.prefix[:len(msgs)-1], nonce, "")
	if err != nil || !s.Synthetic || string(fwd) != string(rec) {
		t.Errorf("%v %+v", err, s)
	}
}

func TestChatBudget(t *testing.T) {
	a := loadChat(t, "pi")
	rec := a.requests[1]
	msgs := messages(rec)
	fired := 0
	env, err := NewPi(a.prefix[:len(msgs)-1], Options{Nonce: nonce, MaxLiveTurns: 1, OnBudget: func() { fired++ }})
	if err != nil {
		t.Fatal(err)
	}
	req := func(extra ...string) *bridge.Request {
		return &bridge.Request{Route: bridge.RouteChat, Body: withMessages(t, rec, append(append(append([]string{}, msgs...), a.nonceMsg), extra...))}
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

func FuzzOpenCodeStrip(f *testing.F) {
	a := loadChat(f, "opencode")
	fuzzChat(f, a)
}

func FuzzPiStrip(f *testing.F) {
	a := loadChat(f, "pi")
	fuzzChat(f, a)
}

// fuzzChat: whatever the body, a stripper either refuses or forwards valid
// JSON that no longer holds the nonce.
func fuzzChat(f *testing.F, a chatAgent) {
	rec := a.requests[2]
	msgs := messages(rec)
	prefix := a.prefix[:len(msgs)-1]
	f.Add(withMessages(f, rec, append(append([]string{}, msgs...), a.nonceMsg)))
	f.Add([]byte(`{"messages":[{"role":"user","content":"` + nonce + `"}]}`))
	f.Add([]byte(`{"messages":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fwd, _, err := a.strip(body, prefix, nonce, "")
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
		if strings.Contains(string(fwd), nonce) {
			t.Fatalf("forwarded the nonce: %q", fwd)
		}
	})
}
