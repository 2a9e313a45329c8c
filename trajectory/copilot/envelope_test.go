package copilot

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/bridge/envelope/chattest"
)

// recordedChat is the recording as the shared Chat harness sees it: the
// requests with Copilot's tags removed (Envelope.Check does that before the
// shared Chat checks), the nonce with Copilot's date line.
func recordedChat(t testing.TB) chattest.Session {
	dir := chattest.Recording(t, AgentName)
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Project(f)
	if err != nil {
		t.Fatal(err)
	}
	reqs := chattest.Requests(t, dir)
	for i, r := range reqs {
		if reqs[i], err = Untag(r); err != nil {
			t.Fatal(err)
		}
	}
	return chattest.Session{Name: AgentName, Prefix: p.Items, Requests: reqs,
		NonceMsg: `{"role":"user","content":"<current_datetime>2026-12-02T07:30:00.000+00:00</current_datetime>\n\n` + chattest.Nonce + `"}`,
		New: func(prefix []json.RawMessage, opts envelope.Options) (*envelope.Chat, error) {
			e, err := NewEnvelope(prefix, opts)
			if err != nil {
				return nil, err
			}
			return e.Chat, nil
		}, Prompt: EnvelopePrompt}
}

func TestEnvelopeStripRecorded(t *testing.T) { chattest.StripRecorded(t, recordedChat(t)) }
func TestEnvelopeRefusals(t *testing.T)      { chattest.Refusals(t, recordedChat(t)) }
func TestEnvelopeBudget(t *testing.T)        { chattest.Budget(t, recordedChat(t)) }
func FuzzEnvelopeStrip(f *testing.F)         { chattest.Fuzz(f, recordedChat(f)) }

// Untag removes only what Copilot adds on resume: the replayed tool
// messages' __copilotMessageSource and the assistant messages' refusal null.
func TestUntag(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"assistant","content":null,"refusal":null,"tool_calls":[]},` +
		`{"role":"tool","tool_call_id":"c","content":"x","__copilotMessageSource":{"kind":"tool","name":"bash","summary":"s"}},` +
		`{"role":"assistant","content":"r","refusal":"no"}],"stream":true}`
	got, err := Untag([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[]},` +
		`{"role":"tool","tool_call_id":"c","content":"x"},{"role":"assistant","content":"r","refusal":"no"}],"stream":true}`
	if string(got) != want {
		t.Errorf("Untag =\n%s\nwant\n%s", got, want)
	}
	if same, _ := Untag([]byte(`{"messages":[{"role":"user","content":"u"}]}`)); !strings.Contains(string(same), `"u"`) {
		t.Errorf("untouched body changed: %s", same)
	}
}

// The nonce is recognised behind Copilot's date line only as the whole
// prompt.
func TestIsNonce(t *testing.T) {
	s := recordedChat(t)
	e, err := s.New(s.Prefix[:1], envelope.Options{Nonce: chattest.Nonce})
	if err != nil || e == nil {
		t.Fatal(err)
	}
	for msg, want := range map[string]bool{
		s.NonceMsg: true,
		`{"role":"user","content":"` + chattest.Nonce + `"}`:                                               true,
		`{"role":"user","content":"<current_datetime>x</current_datetime>\n\nsay ` + chattest.Nonce + `"}`: false,
	} {
		body := []byte(`{"messages":[` + msg + `]}`)
		if got := isNonce(parse(body), chattest.Nonce); got != want {
			t.Errorf("isNonce(%s) = %v, want %v", msg, got, want)
		}
	}
}

func parse(body []byte) gjson.Result { return gjson.GetBytes(body, "messages.0") }
