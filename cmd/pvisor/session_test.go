package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionExitCodes pins the exit code of each bad input of the session
// and capture commands (testscript only tells zero from non-zero).
func TestSessionExitCodes(t *testing.T) {
	home, single := t.TempDir(), t.TempDir()
	const id = "01a22998-8d3b-75d5-8d8d-f6601805e7d0"
	for _, p := range []string{
		filepath.Join(home, ".pi", "agent", "sessions", "--w-a--", "2026-11-29T23-16-33-212Z_"+id+".jsonl"),
		filepath.Join(home, ".pi", "agent", "sessions", "--w-b--", "2026-11-29T23-16-33-212Z_"+id+".jsonl"),
		filepath.Join(single, ".pi", "agent", "sessions", "--w-a--", "2026-11-29T23-16-33-212Z_"+id+".jsonl"),
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"type":"session","version":3,"id":"`+id+`","cwd":"/w/a"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	notStore := t.TempDir()
	os.WriteFile(filepath.Join(notStore, "x"), nil, 0o644)
	tests := []struct {
		args    []string
		want    int
		wantCat string // capture's failure category
	}{
		{[]string{"session", "locate", "--agent", "pi", "--home", home, "0000"}, 10, ""},
		{[]string{"session", "locate", "--agent", "pi", "--home", home, id}, 10, ""}, // two files
		{[]string{"session", "locate", "--agent", "pi", "--home", home, "a/b"}, 2, ""},
		{[]string{"session", "show", "--agent", "pi", "--home", home, "*"}, 2, ""},
		{[]string{"session", "locate", "--agent", "opencode", "--home", home, "ses_x"}, 11, ""},
		{[]string{"session", "locate", "--agent", "openhands", "--home", home, "x"}, 11, ""},
		{[]string{"session", "rewrite", "--agent", "openhands", "--from", "/a", "--to", "/b"}, 11, ""},
		{[]string{"session", "rewrite", "--agent", "nope", "--from", "/a", "--to", "/b"}, 2, ""},
		{[]string{"session", "locate", "--agent", "nope", "x"}, 2, ""},
		{[]string{"session", "locate", "--agent", "pi"}, 2, ""},
		{[]string{"session", "frobnicate", "--agent", "pi"}, 2, ""},
		{[]string{"session", "rewrite", "--agent", "pi", "--to", "/x"}, 2, ""},
		{[]string{"capture", "--agent", "pi", "--home", home, "--session", "0000", "--store", t.TempDir()}, 10, "trajectory_error"},
		{[]string{"capture", "--agent", "pi", "--home", home, "--session", id, "--store", t.TempDir()}, 10, "trajectory_error"},
		{[]string{"capture", "--agent", "pi", "--home", home, "--session", "../x", "--store", t.TempDir()}, 2, "configuration_error"},
		{[]string{"capture", "--agent", "openhands", "--session", "x"}, 11, "unsupported_agent"},
		{[]string{"capture", "--agent", "pi", "--session", id, "--bogus"}, 2, "configuration_error"},
		{[]string{"capture", "--agent", "pi", "--home", single, "--session", id, "--store", notStore}, 2, "configuration_error"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		got := run(tt.args, &stdout, &stderr)
		if got != tt.want {
			t.Errorf("%s: exit %d, want %d (stderr %s)", strings.Join(tt.args, " "), got, tt.want, stderr.String())
		}
		if stderr.Len() == 0 {
			t.Errorf("%s: nothing on stderr", strings.Join(tt.args, " "))
		}
		if tt.wantCat != "" {
			var line struct {
				Failure *struct{ Category string }
			}
			if err := json.Unmarshal(stdout.Bytes(), &line); err != nil || line.Failure == nil || line.Failure.Category != tt.wantCat {
				t.Errorf("%s: stdout %q, want one JSON line with failure %s", strings.Join(tt.args, " "), stdout.String(), tt.wantCat)
			}
		}
	}
}
