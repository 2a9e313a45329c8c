package opencode

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/bridge/envelope/chattest"
)

func recordedChat(t testing.TB) chattest.Session {
	dir := chattest.Recording(t, "opencode")
	f, err := os.Open(filepath.Join(dir, "export.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Project(f)
	if err != nil {
		t.Fatal(err)
	}
	return chattest.Session{Name: "opencode", Prefix: p.Items, Requests: chattest.Requests(t, dir),
		NonceMsg: `{"role":"user","content":"` + chattest.Nonce + `"}`,
		New:      NewEnvelope, Prompt: EnvelopePrompt}
}

func TestEnvelopeStripRecorded(t *testing.T) { chattest.StripRecorded(t, recordedChat(t)) }
func TestEnvelopeRefusals(t *testing.T)      { chattest.Refusals(t, recordedChat(t)) }
func TestEnvelopeBudget(t *testing.T)        { chattest.Budget(t, recordedChat(t)) }
func FuzzEnvelopeStrip(f *testing.F)         { chattest.Fuzz(f, recordedChat(f)) }
func BenchmarkEnvelopeCheck(b *testing.B)    { chattest.BenchmarkCheck(b, recordedChat(b)) }

// OpenCode may quote the nonce; its title calls carry no conversation and
// pass through without it, but a tool-less request with the conversation
// is checked.
func TestEnvelopeQuotedNonceAndSideCall(t *testing.T) {
	s := recordedChat(t)
	rec := s.Requests[1]
	msgs := chattest.Messages(rec)
	prefix := s.Prefix[:len(msgs)-1]
	nonce := chattest.Nonce
	quoted := `{"role":"user","content":"\"` + nonce + `\""}`
	fwd, _, err := s.Strip(chattest.WithMessages(t, rec, append(append([]string{}, msgs...), quoted)), prefix, nonce, "")
	if err != nil || string(fwd) != string(rec) {
		t.Errorf("quoted nonce: %v", err)
	}
	title := `{"model":"m","messages":[{"role":"system","content":"You are a title generator."},{"role":"user","content":"Generate a title"},` + quoted + `]}`
	fwd, sp, err := s.Strip([]byte(title), prefix, nonce, "")
	want := `{"model":"m","messages":[{"role":"system","content":"You are a title generator."},{"role":"user","content":"Generate a title"}]}`
	if err != nil || !sp.Side || string(fwd) != want {
		t.Errorf("title call: %v %+v %s", err, sp, fwd)
	}
	conv := chattest.WithMessages(t, []byte(`{"model":"m","messages":[]}`), append(append([]string{}, msgs...), `{"role":"assistant","content":"`+nonce+`"}`))
	if _, _, err := s.Strip(conv, prefix, nonce, ""); err == nil {
		t.Error("a tool-less request with the conversation passed as a side call")
	}
}
