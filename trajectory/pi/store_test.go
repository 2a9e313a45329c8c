package pi

import (
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/trajectory/formattest"
	"github.com/pvisor/pvisor/trajectory/session/sessiontest"
)

var sessionRecordings = []string{
	"../../testdata/e2e/sessions/pi@0.72.1/2026-12-01T14-51-18-358Z_01a23216-b3cf-733b-a378-4fe0b130750c.jsonl",
	"../../testdata/e2e/sessions/pi@0.73.1/2026-11-29T23-16-33-212Z_01a22998-8d3b-75d5-8d8d-f6601805e7d0.jsonl",
	// 1.x: the system message's cwd section moves with the header.
	"../../testdata/e2e/sessions/pi@1.6.0/2026-12-02T02-58-23-465Z_01a234b0-5e69-723f-9e35-81f8e54c42b0.jsonl",
}

func TestSessionRecordings(t *testing.T) {
	sessiontest.Recordings(t, Sessions(), sessionRecordings, SessionDir, func(t *testing.T, name, got string) {
		formattest.Golden(t, filepath.Join("testdata", "golden", "session-rewrite_"+name+".txt"), got)
	})
}

func TestSessionLocate(t *testing.T) {
	sessiontest.Locate(t, Sessions(), func(id string, variant int) string {
		return filepath.Join("sessions", []string{"--w-repo--", "--tmp-other--"}[variant], "2026-11-29T23-16-33-212Z_"+id+".jsonl")
	})
}

func TestSessionDir(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/pvisor-e2e/pi/repo": "--tmp-pvisor-e2e-pi-repo--",
		"/":                       "----",
		"/a:b/c":                  "--a-b-c--",
		`C:\Users\x`:              "--C--Users-x--",
		"/a.b_c d":                "--a.b_c d--", // unlike Claude, only separators and ':' change
	} {
		if got := SessionDir(in); got != want {
			t.Errorf("SessionDir(%q) = %q, want %q", in, got, want)
		}
	}
}
