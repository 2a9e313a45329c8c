package kimi

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/bridge/envelope/chattest"
)

func recordedChat(t testing.TB) chattest.Session {
	dir := chattest.Recording(t, "kimi")
	data, err := os.ReadFile(filepath.Join(dir, "wire.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Project(data)
	if err != nil {
		t.Fatal(err)
	}
	return chattest.Session{Name: "kimi", Prefix: p.Items, Requests: chattest.Requests(t, dir),
		NonceMsg: `{"role":"user","content":"` + chattest.Nonce + `"}`,
		New:      NewEnvelope, Prompt: EnvelopePrompt}
}

func TestEnvelopeStripRecorded(t *testing.T) { chattest.StripRecorded(t, recordedChat(t)) }
func TestEnvelopeRefusals(t *testing.T)      { chattest.Refusals(t, recordedChat(t)) }
func TestEnvelopeBudget(t *testing.T)        { chattest.Budget(t, recordedChat(t)) }
func FuzzEnvelopeStrip(f *testing.F)         { chattest.Fuzz(f, recordedChat(f)) }

// autoMode is the reminder Kimi adds after every prompt, the resumed one
// included.
const autoMode = `{"role":"user","content":"<system-reminder>\nAuto permission mode is active. Tool approvals will be handled automatically while this mode remains enabled.\n</system-reminder>"}`

// dateChanged is the reminder Kimi 2.1 adds to a prompt when the session
// was last written on another day (a recording continued the next day).
const dateChanged = `{"role":"user","content":"<system-reminder>\nThe date has changed. Today's date is now 2026-12-03. Rely on this reminder over any earlier date statement for the current date. DO NOT mention this to the user explicitly.\n</system-reminder>"}`

// The reminders Kimi adds to the resumed prompt, right after the nonce,
// are removed with it; one anywhere else is part of the conversation and
// refused, and a live message after them is kept.
func TestEnvelopePromptReminders(t *testing.T) {
	s := recordedChat(t)
	rec := s.Requests[3]
	msgs := chattest.Messages(rec)
	live := `{"role":"assistant","content":"live"}`
	for _, tc := range []struct {
		name  string
		after []string
		live  int
	}{
		{"auto mode", []string{autoMode}, 0},
		{"date change then auto mode", []string{dateChanged, autoMode}, 0},
		{"then a live turn", []string{dateChanged, autoMode, live}, 1},
	} {
		body := chattest.WithMessages(t, rec, append(append(append([]string{}, msgs...), s.NonceMsg), tc.after...))
		fwd, sp, err := s.Strip(body, s.Prefix[:len(msgs)-1], chattest.Nonce, "")
		if err != nil || len(sp.Live) != tc.live {
			t.Fatalf("%s: %v %+v", tc.name, err, sp)
		}
		if want := chattest.WithMessages(t, rec, append(append([]string{}, msgs...), tc.after[len(tc.after)-tc.live:]...)); string(fwd) != string(want) {
			t.Errorf("%s: forwarded\n%s\nwant\n%s", tc.name, fwd, want)
		}
	}
	for _, before := range []string{autoMode, dateChanged} {
		body := chattest.WithMessages(t, rec, append(append([]string{}, msgs...), before, s.NonceMsg))
		if _, _, err := s.Strip(body, s.Prefix[:len(msgs)-1], chattest.Nonce, ""); err == nil {
			t.Errorf("a reminder before the nonce was accepted: %.60s", before)
		}
	}
}

// The projection of the recording equals, message for message, what the
// real CLI sent in its last request (after the system message).
func TestProjectionIsTheRecordedRequest(t *testing.T) {
	s := recordedChat(t)
	last := chattest.Messages(s.Requests[len(s.Requests)-1])
	want := len(last) - 1 + 1 // + the final text-only answer, which no request carried
	if len(s.Prefix) != want {
		t.Fatalf("projection has %d messages, the last request %d after the system one", len(s.Prefix), len(last)-1)
	}
	body := chattest.WithMessages(t, s.Requests[len(s.Requests)-1], append(append([]string{}, last...), s.NonceMsg))
	if _, _, err := s.Strip(body, s.Prefix[:len(last)-1], chattest.Nonce, ""); err != nil {
		t.Error(err)
	}
}
