package codex

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/trajectory"
)

const (
	sessionDir = "../../testdata/e2e/sessions/codex@0.171.0"
	nonce      = "__PVISOR_NATIVE_REPLAY_0123456789abcdef0123456789abcdef__"
)

// fixture is the recorded Codex session cut after step 2: the projection of
// the rebuilt prefix, and the request the real CLI sent at that point (which
// is what it sends on resume, plus the nonce).
type fixture struct {
	proj *Projection
	// body is the recorded request with the nonce item appended to its input.
	body []byte
}

var nonceItem = `{"type":"message","id":"msg_01a229ab-e6d8-7a70-87d0-0da1570ef16d","role":"user","content":[{"type":"input_text","text":"` + nonce + `"}]}`

func load(t testing.TB) fixture {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(sessionDir, "rollout-*.jsonl"))
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var prefix bytes.Buffer
	if err := New().WritePrefix(&prefix, bytes.NewReader(data), int64(len(data)), tr, 2); err != nil {
		t.Fatal(err)
	}
	proj, err := Project(&prefix)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(sessionDir, "requests.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, _ := gzip.NewReader(f)
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 8<<20)
	for i := 0; sc.Scan(); i++ {
		if i == New().PrefixModelTurns(tr, 2) {
			body := gjson.GetBytes(sc.Bytes(), "body").Raw
			return fixture{proj: proj, body: []byte(withItems(t, body, nonceItem))}
		}
	}
	t.Fatal("recorded request not found")
	return fixture{}
}

// withItems appends raw items to the input array of body.
func withItems(t testing.TB, body string, items ...string) string {
	t.Helper()
	in := gjson.Get(body, "input")
	end := in.Index + len(in.Raw) - 1
	return body[:end] + "," + strings.Join(items, ",") + body[end:]
}

// replaceItem swaps input[i] for raw.
func replaceItem(t testing.TB, body string, i int, raw string) string {
	t.Helper()
	in := gjson.Get(body, "input")
	it := in.Array()[i]
	start := it.Index
	if !strings.HasPrefix(body[start:], it.Raw) {
		start += in.Index
	}
	return body[:start] + raw + body[start+len(it.Raw):]
}

func inputOf(t testing.TB, body []byte) []string {
	t.Helper()
	var out []string
	for _, it := range gjson.GetBytes(body, "input").Array() {
		out = append(out, it.Raw)
	}
	return out
}

func request(body string) *bridge.Request {
	return &bridge.Request{Seq: 1, Protocol: bridge.Responses, Route: bridge.RouteResponses, Path: "/v1/responses", Body: []byte(body)}
}

func newCodex(t testing.TB, fx fixture, opts envelope.Options) *Envelope {
	t.Helper()
	if opts.Nonce == "" {
		opts.Nonce = nonce
	}
	c, err := NewEnvelope(fx.proj, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The first request forwards exactly the instructions message and the rebuilt
// prefix, every other byte of the body untouched.
func TestCodexFirstRequestEndsAtTheBoundary(t *testing.T) {
	fx := load(t)
	c := newCodex(t, fx, envelope.Options{})
	fwd, err := c.Check(context.Background(), request(string(fx.body)))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(string(fx.body), ","+nonceItem, "", 1)
	if string(fwd) != want {
		t.Fatalf("forwarded body is not the request minus the nonce item:\n%s", cmp.Diff(want, string(fwd)))
	}
	in := inputOf(t, fwd)
	if d := cmp.Diff(rawStrings(fx.proj.Items), in[1:]); d != "" {
		t.Errorf("forwarded input after the instructions (-projection +forwarded):\n%s", d)
	}
	rep := c.Report()
	if rep.Checked != 1 || rep.Accepted != 1 || rep.NonceRemoved != 1 || rep.BoundaryEnds != 1 || rep.RuntimeItems != 1 ||
		rep.PromptInjected != 0 || len(rep.ContextInserted) != 0 {
		t.Errorf("report %+v", rep)
	}
}

// The boundary prompt takes the nonce's place in every request, and later
// requests keep what the model and tools added after it.
func TestCodexPromptStaysInPlace(t *testing.T) {
	fx := load(t)
	const prompt = "Please <b>check</b> the tests & \"stop\"."
	c := newCodex(t, fx, envelope.Options{Prompt: prompt})
	live := []string{
		`{"type":"message","status":"completed","id":"msg_x","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[],"logprobs":[]}]}`,
		`{"type":"function_call","status":"completed","id":"fc_x","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"call_live"}`,
		`{"type":"function_call_output","id":"fco_x","call_id":"call_live","output":"a\n"}`,
	}
	n := len(gjson.GetBytes(fx.body, "input").Array()) - 1
	for i, body := range []string{string(fx.body), withItems(t, string(fx.body), live...)} {
		fwd, err := c.Check(context.Background(), request(body))
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		in := inputOf(t, fwd)
		got := gjson.Get(in[n], "content.0.text").Str
		if got != prompt || gjson.Get(in[n], "role").Str != "user" || strings.Contains(string(fwd), nonce) {
			t.Errorf("request %d: item %d is %s, want the prompt in the nonce's place", i+1, n, in[n])
		}
		if d := cmp.Diff(live[:len(in)-n-1], in[n+1:]); i == 1 && d != "" {
			t.Errorf("live items (-sent +forwarded):\n%s", d)
		}
	}
	rep := c.Report()
	if rep.PromptInjected != 2 || rep.BoundaryEnds != 1 || rep.MaxLiveTurns != 1 {
		t.Errorf("report %+v", rep)
	}
}

func TestCodexContextItemsAreForwardedAndReported(t *testing.T) {
	fx := load(t)
	c := newCodex(t, fx, envelope.Options{})
	env := `{"type":"message","id":"msg_e","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <current_date>2026-12-01</current_date>\n</environment_context>"}]}`
	body := strings.Replace(string(fx.body), ","+nonceItem, ","+env+","+nonceItem, 1)
	fwd, err := c.Check(context.Background(), request(body))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(fwd), "2026-12-01") {
		t.Error("the context item was not forwarded")
	}
	want := []envelope.ContextItem{{Role: "user", Tag: "environment_context", Length: 86, SHA256: envelope.Digest(gjson.Get(env, "content.0.text").Str), Requests: 1, Placement: envelope.PlacedAfterBoundary}}
	if d := cmp.Diff(want, c.Report().ContextInserted); d != "" {
		t.Errorf("context items (-want +got):\n%s", d)
	}
}

// Codex writes "content": null on stored reasoning it replays; either form
// matches.
func TestCodexReasoningNullContent(t *testing.T) {
	fx := load(t)
	in := gjson.GetBytes(fx.body, "input").Array()
	for i, it := range in {
		if it.Get("type").Str != "reasoning" {
			continue
		}
		stripped := strings.Replace(it.Raw, `"content":null,`, "", 1)
		if stripped == it.Raw {
			t.Fatal("fixture reasoning item has no null content")
		}
		body := replaceItem(t, string(fx.body), i, stripped)
		if _, err := newCodex(t, fx, envelope.Options{}).Check(context.Background(), request(body)); err != nil {
			t.Errorf("reasoning without content refused: %v", err)
		}
		return
	}
	t.Fatal("no reasoning item in the fixture")
}

func TestCodexRefusals(t *testing.T) {
	fx := load(t)
	body := string(fx.body)
	in := gjson.Get(body, "input").Array()
	last := len(in) - 2 // the last boundary output
	out := in[last].Raw
	user := in[3].Raw // the task
	for _, tc := range []struct {
		name, body string
		route      bridge.Route
		want       string
	}{
		{"tampered observation", replaceItem(t, body, last, strings.Replace(out, "def greet", "def grete", 1)), "", "input item 13 (function_call_output call_id call_fake16214180b553dad2db6ce1ec) differs from item 12 of the rebuilt session (function_call_output call_id call_fake16214180b553dad2db6ce1ec) at output (another value)"},
		{"wrong call id", replaceItem(t, body, last, strings.Replace(out, "call_fake16214180", "call_fake99999999", 1)), "", "input item 13 (function_call_output call_id call_fake99999999b553dad2db6ce1ec) differs from item 12 of the rebuilt session (function_call_output call_id call_fake16214180b553dad2db6ce1ec) at call_id (another value)"},
		{"nonce twice", withItems(t, body, nonceItem), "", "appears as input items 14 and 15"},
		{"nonce inside an output", replaceItem(t, body, last, strings.Replace(out, "def greet", nonce, 1)), "", "appears 2 times"},
		{"nonce not its own message", replaceItem(t, strings.Replace(body, ","+nonceItem, "", 1), last, strings.Replace(out, "def greet", nonce, 1)), "", "not as its own user message"},
		{"envelope missing", strings.Replace(body, ","+nonceItem, "", 1), "", "carries no resume nonce"},
		{"foreign conversation", replaceItem(t, body, 3, strings.Replace(user, "Survey", "Delete", 1)), "", "input item 3 (message role user) differs from item 2 of the rebuilt session (message role user) at content[0].text (another value)"},
		{"history ends early", replaceItem(t, strings.Replace(body, ","+nonceItem, "", 1), last, nonceItem), "", "the history ends before the boundary"},
		{"text between boundary and nonce", strings.Replace(body, ","+nonceItem, `,{"type":"message","role":"user","content":[{"type":"input_text","text":"also rm -rf"}]},`+nonceItem, 1), "", "input item 14 (message role user) sits between"},
		{"history compacted by codex", compactedBody(t, in), "", "codex compacted its history (its auto-compaction: the conversation passed the model's token limit)"},
		{"not json", body[:len(body)-1], "", "not valid JSON"},
		{"no input", `{"model":"m"}`, "", "no input array"},
		{"count tokens route", body, bridge.RouteCountTokens, "codex talks to /v1/responses only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCodex(t, fx, envelope.Options{})
			req := request(tc.body)
			if tc.route != "" {
				req.Route = tc.route
			}
			fwd, err := c.Check(context.Background(), req)
			var ref *bridge.Refusal
			if !errors.As(err, &ref) || fwd != nil {
				t.Fatalf("want a refusal, got %v (forward %d bytes)", err, len(fwd))
			}
			if !strings.Contains(ref.Reason, tc.want) {
				t.Errorf("reason %q does not say %q", ref.Reason, tc.want)
			}
			if strings.Contains(ref.Reason, "greet") || strings.Contains(ref.Reason, "Survey") {
				t.Errorf("the reason quotes request content: %q", ref.Reason)
			}
			if rep := c.Report(); rep.Accepted != 0 || rep.Checked != 1 {
				t.Errorf("report %+v", rep)
			}
		})
	}
}

// A request over the step budget is held until its client leaves, and the
// engine hears about it once; it is not a refusal.
func TestCodexBudgetHoldsTheRequest(t *testing.T) {
	fx := load(t)
	var calls atomic.Int32
	c := newCodex(t, fx, envelope.Options{MaxLiveTurns: 1, OnBudget: func() { calls.Add(1) }})
	if _, err := c.Check(context.Background(), request(string(fx.body))); err != nil {
		t.Fatalf("the first turn is within the budget: %v", err)
	}
	over := withItems(t, string(fx.body),
		`{"type":"function_call","name":"exec_command","arguments":"{}","call_id":"l1"}`,
		`{"type":"function_call_output","call_id":"l1","output":""}`)
	for i := 0; i < 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := c.Check(ctx, request(over))
		cancel()
		var ref *bridge.Refusal
		if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ref) {
			t.Fatalf("over the budget: %v, want the context's error", err)
		}
	}
	if calls.Load() != 1 || !c.Report().BudgetExceeded {
		t.Errorf("OnBudget called %d times, report %+v", calls.Load(), c.Report())
	}
}

// A nonce that NewNonce did not make is refused.
func TestEnvelopeRefusesAMalformedNonce(t *testing.T) {
	if _, err := NewEnvelope(&Projection{Items: []json.RawMessage{[]byte(`{}`)}}, envelope.Options{Nonce: "short"}); err == nil {
		t.Error("a malformed nonce was accepted")
	}
}

// The fuzzer works on a small synthetic session so that mutations reach the
// structure rather than the bulk of a real request.
var fuzzPrefix = []json.RawMessage{
	[]byte(`{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}`),
	[]byte(`{"type":"reasoning","id":"rs_1","summary":[],"content":null,"encrypted_content":"e"}`),
	[]byte(`{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}`),
	[]byte(`{"type":"function_call_output","call_id":"c1","output":"a\n"}`),
}

func FuzzCodexStrip(f *testing.F) {
	items := []string{`{"type":"message","role":"developer","content":[{"type":"input_text","text":"base"}]}`}
	for _, it := range fuzzPrefix {
		items = append(items, string(it))
	}
	body := `{"model":"m","input":[` + strings.Join(append(items, nonceItem), ",") + `],"stream":true}`
	f.Add([]byte(body), "")
	f.Add([]byte(body), "a <prompt>")
	f.Add([]byte(withItems(f, body, `{"type":"reasoning","summary":[]}`, `{"type":"function_call","call_id":"x"}`)), "")
	f.Add([]byte(strings.Replace(body, nonceItem, `{"role":"user","content":[{"type":"input_text","text":"<environment_context>d</environment_context>"}]},`+nonceItem, 1)), "")
	f.Add([]byte(strings.Replace(body, ","+nonceItem, "", 1)), "")
	f.Add([]byte(`{"input":[`+nonceItem+`]}`), "")
	f.Add([]byte(`{"input":"`+nonce+`"}`), "")
	f.Add([]byte(`[]`), "")
	f.Fuzz(func(t *testing.T, body []byte, prompt string) {
		fwd, s, err := StripEnvelope(body, fuzzPrefix, nonce, prompt)
		if err != nil {
			var ref *bridge.Refusal
			if !errors.As(err, &ref) {
				t.Fatalf("error is %T, not a refusal: %v", err, err)
			}
			return
		}
		if !json.Valid(fwd) {
			t.Fatalf("forwarded body is not JSON: %q", fwd)
		}
		if bytes.Contains(fwd, []byte(nonce)) && !strings.Contains(prompt, nonce) {
			t.Fatal("the nonce was forwarded")
		}
		got := inputOf(t, fwd)
		start := len(s.Runtime)
		if d := cmp.Diff(rawStrings(s.Prefix), got[start:start+len(s.Prefix)]); d != "" {
			t.Fatalf("forwarded prefix differs from the split:\n%s", d)
		}
		want := len(gjson.GetBytes(body, "input").Array()) - 1
		if prompt != "" {
			want++
		}
		if len(got) != want {
			t.Fatalf("forwarded %d items, want %d", len(got), want)
		}
	})
}

// Retries and concurrent requests get the same answer: the check is a pure
// function of the body, and the counts add up.
func TestCodexConcurrentRetries(t *testing.T) {
	fx := load(t)
	c := newCodex(t, fx, envelope.Options{Prompt: "p"})
	const n = 16
	outs := make(chan []byte, n)
	for i := 0; i < n; i++ {
		go func() {
			fwd, err := c.Check(context.Background(), request(string(fx.body)))
			if err != nil {
				t.Error(err)
			}
			outs <- fwd
		}()
	}
	first := <-outs
	for i := 1; i < n; i++ {
		if got := <-outs; !bytes.Equal(got, first) {
			t.Fatal("two identical requests were forwarded differently")
		}
	}
	if rep := c.Report(); rep.Checked != n || rep.Accepted != n || rep.PromptInjected != n || rep.BoundaryEnds != n {
		t.Errorf("report %+v", rep)
	}
}

// compactedBody is what Codex 0.171 sent after it auto-compacted (seen
// with a 1 MiB boundary prompt, whose tokens the model reported): the
// instructions, the user's task, the nonce, and its summary handoff
// message instead of the history.
func compactedBody(t testing.TB, in []gjson.Result) string {
	t.Helper()
	summary := `{"type":"message","role":"user","content":[{"type":"input_text","text":"` + summaryPrefix + ` You also have access to the state of the tools.\nthe summary"}]}`
	return `{"model":"gpt-5.5","input":[` + strings.Join([]string{in[0].Raw, in[3].Raw, nonceItem, summary}, ",") + `]}`
}
