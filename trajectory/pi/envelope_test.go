package pi

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/bridge/envelope/chattest"
)

func recordedChat(t testing.TB) chattest.Session {
	dir := chattest.Recording(t, "pi")
	files, _ := filepath.Glob(filepath.Join(dir, "2026-*.jsonl"))
	if len(files) == 0 {
		t.Fatalf("no session file in %s", dir)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Project(f)
	if err != nil {
		t.Fatal(err)
	}
	return chattest.Session{Name: "pi", Prefix: p.Items, Requests: chattest.Requests(t, dir),
		NonceMsg: `{"role":"user","content":[{"type":"text","text":"` + chattest.Nonce + `"}]}`,
		New:      NewEnvelope, Prompt: EnvelopePrompt}
}

func TestEnvelopeStripRecorded(t *testing.T) { chattest.StripRecorded(t, recordedChat(t)) }
func TestEnvelopeRefusals(t *testing.T)      { chattest.Refusals(t, recordedChat(t)) }
func TestEnvelopeBudget(t *testing.T)        { chattest.Budget(t, recordedChat(t)) }
func FuzzEnvelopeStrip(f *testing.F)         { chattest.Fuzz(f, recordedChat(f)) }
func BenchmarkEnvelopeCheck(b *testing.B)    { chattest.BenchmarkCheck(b, recordedChat(b)) }

// Pi regenerates its synthetic assistant message before the nonce on every
// request; it is removed with the nonce.
func TestEnvelopeSyntheticAssistant(t *testing.T) {
	s := recordedChat(t)
	rec := s.Requests[3]
	msgs := chattest.Messages(rec)
	body := chattest.WithMessages(t, rec, append(append(append([]string{}, msgs...), Synthetic), s.NonceMsg))
	fwd, sp, err := s.Strip(body, s.Prefix[:len(msgs)-1], chattest.Nonce, "")
	if err != nil || !sp.Synthetic || string(fwd) != string(rec) {
		t.Errorf("%v %+v", err, sp)
	}
}
