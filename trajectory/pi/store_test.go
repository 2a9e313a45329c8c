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
}

func TestSessionRewrite(t *testing.T) {
	for _, path := range sessionRecordings {
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			golden := filepath.Join("testdata", "golden", "session-rewrite_"+filepath.Base(filepath.Dir(path))+".txt")
			formattest.Golden(t, golden, sessiontest.Rewrite(t, Sessions(), path))
		})
	}
}

func TestSessionLocateRecorded(t *testing.T) {
	for _, path := range sessionRecordings {
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			_, loc := sessiontest.Recorded(t, Sessions(), filepath.Dir(path))
			// The real CLI named the directory as SessionDir does.
			if got, want := filepath.Base(filepath.Dir(loc.Main)), SessionDir("/tmp/pvisor-e2e/pi/repo"); got != want {
				t.Errorf("session directory %s, SessionDir gives %s", got, want)
			}
		})
	}
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
