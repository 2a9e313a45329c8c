package fakemodel

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// obj is a JSON object with a fixed key order, so every event is written with its
// keys in the order the real APIs use and golden streams are byte-stable.
type obj []kv

type kv struct {
	k string
	v any
}

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshal(f.k))
		b.WriteByte(':')
		b.Write(marshal(f.v))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal encodes without HTML escaping (agent prompts are full of <tags>) and
// panics on failure: every value passed here is built by this package.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("fakemodel: marshal %T: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// fakeID is prefix plus 24 hex digits derived from parts: the same reply in the same
// position always gets the same ids, which keeps retries and goldens consistent.
func fakeID(prefix string, parts ...any) string {
	sum := sha256.Sum256([]byte(fmt.Sprint(parts...)))
	return prefix + hex.EncodeToString(sum[:12])
}

// chunks splits s into pieces of at most n bytes at rune boundaries, so clients see
// several deltas per block as they do from a real model.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			cut = n
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

const chunkSize = 24

// sse writes server-sent events and flushes after each one, as a real provider does.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w)}
}

// event writes "event: name" (omitted when name is empty, as Chat Completions does)
// and one data line.
func (s *sse) event(name string, data []byte) error {
	var b bytes.Buffer
	if name != "" {
		b.WriteString("event: ")
		b.WriteString(name)
		b.WriteByte('\n')
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, err := s.w.Write(b.Bytes()); err != nil {
		return err
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(marshal(v), '\n'))
}
