package recorded

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/fakemodel"
)

var replies = []fakemodel.Reply{
	{Thinking: "Check the tree.", Text: "Listing.", ToolCalls: []fakemodel.ToolCall{
		{ID: "call_orig1", Name: "exec_command", Arguments: []byte(`{"cmd":"ls"}`)}}},
	{ToolCalls: []fakemodel.ToolCall{{ID: "call_orig2", Type: "custom", Name: "apply_patch", Input: "*** Begin Patch\n*** End Patch\n"}}},
	{Text: "All done."},
}

// input builds a Responses body whose conversation holds n assistant turns.
func input(n int, stream bool) string {
	items := []string{`{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}`}
	for i := 0; i < n; i++ {
		items = append(items, fmt.Sprintf(`{"type":"function_call","name":"x","arguments":"{}","call_id":"p%d"}`, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"p%d","output":"ok"}`, i))
	}
	return fmt.Sprintf(`{"model":"m","stream":%v,"tools":[{"type":"function","name":"x"}],"input":[%s]}`, stream, strings.Join(items, ","))
}

func send(t *testing.T, srv *bridge.Server, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/v1/responses", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+srv.Token())
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func start(t *testing.T, up bridge.Upstream) *bridge.Server {
	t.Helper()
	srv, err := bridge.Start(bridge.Options{Upstream: up, Conversation: bridge.Passthrough})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// The first model request fixes the base; each later turn gets the next
// recorded action, with its recorded call ids, and requests past the end a
// closing text.
func TestPlaysRecordedActionsAfterTheBase(t *testing.T) {
	up, err := New(bridge.Responses, replies, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	srv := start(t, up)
	type got struct {
		Types []string
		Calls []string
		Text  string
	}
	answer := func(turns int) got {
		code, body := send(t, srv, input(turns, false))
		if code != 200 {
			t.Fatalf("%d turns: status %d: %s", turns, code, body)
		}
		var g got
		for _, it := range gjson.Get(body, "output").Array() {
			g.Types = append(g.Types, it.Get("type").Str)
			if id := it.Get("call_id").Str; id != "" {
				g.Calls = append(g.Calls, id)
			}
			if txt := it.Get("content.0.text").Str; txt != "" {
				g.Text = txt
			}
		}
		return g
	}
	for _, tc := range []struct {
		turns int
		want  got
	}{
		{3, got{Types: []string{"reasoning", "message", "function_call"}, Calls: []string{"call_orig1"}, Text: "Listing."}},
		{3, got{Types: []string{"reasoning", "message", "function_call"}, Calls: []string{"call_orig1"}, Text: "Listing."}}, // a retry
		{4, got{Types: []string{"custom_tool_call"}, Calls: []string{"call_orig2"}}},
		{5, got{Types: []string{"message"}, Text: "All done."}},
		{6, got{Types: []string{"message"}, Text: "The recorded trajectory has no further action to play."}},
	} {
		if d := cmp.Diff(tc.want, answer(tc.turns)); d != "" {
			t.Errorf("%d turns (-want +got):\n%s", tc.turns, d)
		}
	}
	if code, body := send(t, srv, input(2, false)); code != 400 || !strings.Contains(body, "fewer than the 3") {
		t.Errorf("a conversation before the base: %d %s", code, body)
	}
	if d := cmp.Diff(Stats{Actions: 3, Base: 3, Played: 3, PastEnd: 1}, up.Stats()); d != "" {
		t.Errorf("stats (-want +got):\n%s", d)
	}

	// A fresh copy has played nothing: its base is its own first request's.
	fresh := up.Fresh()
	srv = start(t, fresh)
	if d := cmp.Diff(got{Types: []string{"reasoning", "message", "function_call"}, Calls: []string{"call_orig1"}, Text: "Listing."}, answer(5)); d != "" {
		t.Errorf("fresh copy, first request (-want +got):\n%s", d)
	}
	if d := cmp.Diff(Stats{Actions: 3, Base: 5, Played: 1}, fresh.Stats()); d != "" {
		t.Errorf("fresh copy stats (-want +got):\n%s", d)
	}
}

// Streams arrive event by event through the bridge, complete, and several at
// once do not disturb each other.
func TestStreamsConcurrently(t *testing.T) {
	up, err := New(bridge.Responses, replies, "run-2")
	if err != nil {
		t.Fatal(err)
	}
	srv := start(t, up)
	if code, body := send(t, srv, input(3, true)); code != 200 {
		t.Fatalf("base request: %d %s", code, body)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(turns int) {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/v1/responses", strings.NewReader(input(turns, true)))
			req.Header.Set("Authorization", "Bearer "+srv.Token())
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer res.Body.Close()
			var events []string
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
					events = append(events, ev)
				}
			}
			if len(events) < 3 || events[0] != "response.created" || events[len(events)-1] != "response.completed" {
				errs <- fmt.Errorf("turns %d: events %v", turns, events)
			}
		}(3 + i%3)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestRefusesOtherProtocolsAndBadScripts(t *testing.T) {
	up, err := New(bridge.Responses, replies, "s")
	if err != nil {
		t.Fatal(err)
	}
	if up.Accepts(bridge.Anthropic) || !up.Accepts(bridge.Responses) {
		t.Error("Accepts must match the protocol it plays")
	}
	if _, err := up.Send(context.Background(), &bridge.Request{Protocol: bridge.Chat}); err == nil {
		t.Error("Send of another protocol must fail")
	}
	if _, err := New(bridge.Responses, []fakemodel.Reply{{}}, "s"); err == nil || !strings.Contains(err.Error(), "reply 0 is empty") {
		t.Errorf("empty reply: %v", err)
	}
	if _, err := New("carrier-pigeon", replies, "s"); err == nil {
		t.Error("unknown protocol accepted")
	}
}

// A client that leaves mid-stream stops the writer: Send's goroutine ends.
func TestClientCancelStopsTheWriter(t *testing.T) {
	before := runtime.NumGoroutine()
	long := []fakemodel.Reply{{Text: strings.Repeat("word ", 200000)}}
	up, err := New(bridge.Responses, long, "s")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res, err := up.Send(ctx, &bridge.Request{Protocol: bridge.Responses, Path: "/v1/responses", Body: []byte(input(0, true))})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	if _, err := io.ReadFull(res.Body, buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	res.Body.Close()
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left running after the client left (%d before)", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTextActions: an agent that sends no tools (mini-swe-agent 1.x) gets the
// recorded replies from its first request on, with that request's turns as
// the base, not the side text.
func TestTextActions(t *testing.T) {
	texts := []fakemodel.Reply{{Text: "```bash\nls\n```"}, {Text: "```bash\npwd\n```"}}
	up, err := New(bridge.Chat, texts, "run-1", TextActions())
	if err != nil {
		t.Fatal(err)
	}
	srv := start(t, up)
	chat := func(turns int) string {
		msgs := []string{`{"role":"system","content":"s"}`, `{"role":"user","content":"go"}`}
		for i := 0; i < turns; i++ {
			msgs = append(msgs, `{"role":"assistant","content":"a"}`, `{"role":"user","content":"o"}`)
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","messages":[`+strings.Join(msgs, ",")+`]}`))
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return gjson.GetBytes(b, "choices.0.message.content").Str
	}
	for turns, want := range []string{"", "", "", "```bash\nls\n```", "```bash\npwd\n```"} {
		if turns < 3 {
			continue
		}
		if got := chat(turns); got != want {
			t.Errorf("%d turns: %q, want %q", turns, got, want)
		}
	}
	if st := up.Stats(); st.Base != 3 || st.Played != 2 || st.Side != 0 {
		t.Errorf("stats %+v", st)
	}
}
