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
		{[]string{"session", "locate", "--agent", "opencode", "--home", home, "ses_x"}, 10, ""}, // no database
		{[]string{"session", "show", "--agent", "opencode", "--home", home, "../ses_x"}, 2, ""},
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

// TestSessionOpenCode: locate and show find a session by its key in a
// database the real CLI filled; a message id, a prefix of the id and
// another version's session are not found; the home is only read.
func TestSessionOpenCode(t *testing.T) {
	const id = "ses_dd667972effeIl1TDXAj2ZWXpJ"
	home := openCodeHome(t, "1.18.33", "")
	db := filepath.Join(home, ".local", "share", "opencode", "opencode.db")
	before, _ := os.ReadFile(db)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"session", "locate", "--agent", "opencode", "--home", home, id}, &stdout, &stderr); code != 0 || stdout.String() != db+"\n" {
		t.Errorf("locate: exit %d, stdout %q, stderr %s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"session", "show", "--agent", "opencode", "--home", home, "--json", id}, &stdout, &stderr); code != 0 {
		t.Fatalf("show: exit %d: %s", code, stderr.String())
	}
	var info dbSession
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil {
		t.Fatal(err)
	}
	want := dbSession{Agent: "opencode", SessionID: id, Path: db, OriginCwd: "/tmp/ocfix/1.18.33/ws", CLIVersion: "1.18.33",
		Title: "Scripted side reply.", Messages: 7, Parts: 27, Updated: info.Updated}
	if info != want || info.Updated == 0 {
		t.Errorf("show = %+v, want %+v", info, want)
	}
	for _, other := range []string{"msg_22998696c001QjEKXong8724tS", id[:len(id)-1], "ses_dcde9ed9dffedKYacsnTgsQHbp"} {
		stderr.Reset()
		if code := run([]string{"session", "locate", "--agent", "opencode", "--home", home, other}, &stdout, &stderr); code != 10 || !strings.Contains(stderr.String(), "no opencode session") {
			t.Errorf("locate %s: exit %d, stderr %s", other, code, stderr.String())
		}
	}
	after, _ := os.ReadFile(db)
	if entries, _ := os.ReadDir(filepath.Dir(db)); !bytes.Equal(before, after) || len(entries) != 1 {
		t.Errorf("the home changed: %v", entries)
	}
}
