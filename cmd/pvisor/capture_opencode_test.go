package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay/capture"
)

// TestCaptureOpenCodeRefusals: an OpenCode capture that cannot be made
// exits with its code, prints a result line, and leaves no store and
// nothing in the state root but its version cache. The CLI here is a
// script: the real one's export is the e2e test's (TestCaptureOpenCode).
func TestCaptureOpenCodeRefusals(t *testing.T) {
	const id = "ses_dd667972effeIl1TDXAj2ZWXpJ"
	withDB, empty := t.TempDir(), t.TempDir()
	data := filepath.Join(withDB, ".local", "share", "opencode")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	// SQLite keeps the key as its bytes; a database without it is another.
	db := []byte("SQLite format 3\x00 session " + id + " ...")
	if err := os.WriteFile(filepath.Join(data, "opencode.db"), db, 0o644); err != nil {
		t.Fatal(err)
	}
	otherDB := t.TempDir()
	os.MkdirAll(filepath.Join(otherDB, ".local", "share", "opencode"), 0o755)
	os.WriteFile(filepath.Join(otherDB, ".local", "share", "opencode", "opencode.db"), []byte("SQLite format 3\x00 session ses_other"), 0o644)
	failing := fakeOpenCode(t, `echo "Error: session not found" >&2; exit 1`)
	wrongID := fakeOpenCode(t, `echo 'Exporting session: x'; echo '{"info":{"id":"ses_other","directory":"/w"},"messages":[]}'`)
	tests := []struct {
		name     string
		args     []string
		want     int
		category string
	}{
		{"no database", []string{"--home", empty, "--session", id}, 10, "trajectory_error"},
		{"not in the database", []string{"--home", otherDB, "--session", id}, 10, "trajectory_error"},
		{"id with a path", []string{"--home", withDB, "--session", "../ses_x"}, 2, "configuration_error"},
		{"no such CLI", []string{"--home", withDB, "--session", id, "--agent-entrypoint", filepath.Join(empty, "opencode")}, 2, "configuration_error"},
		{"export fails", []string{"--home", withDB, "--session", id, "--agent-entrypoint", failing}, 10, "trajectory_error"},
		{"export of another session", []string{"--home", withDB, "--session", id, "--agent-entrypoint", wrongID}, 10, "trajectory_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			store, state := filepath.Join(tmp, "store"), filepath.Join(tmp, "state")
			args := append([]string{"capture", "--agent", "opencode", "--store", store, "--state-dir", state}, tt.args...)
			var stdout, stderr bytes.Buffer
			if got := run(args, &stdout, &stderr); got != tt.want {
				t.Errorf("exit %d, want %d (stderr %s)", got, tt.want, stderr.String())
			}
			var line struct {
				Bundle  *string
				Failure *struct{ Category string }
			}
			if err := json.Unmarshal(stdout.Bytes(), &line); err != nil || line.Failure == nil || line.Failure.Category != tt.category || line.Bundle != nil {
				t.Errorf("stdout %q, want one JSON line with failure %s", stdout.String(), tt.category)
			}
			if _, err := os.Lstat(store); err == nil {
				t.Errorf("the store was made")
			}
			entries, _ := os.ReadDir(state)
			for _, e := range entries {
				if e.IsDir() {
					t.Errorf("%s left in the state root", e.Name())
				}
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(data, "opencode.db")); !bytes.Equal(b, db) {
		t.Errorf("the home's database changed: %q", b)
	}
}

// TestCaptureFlagsOnlyForExport: the export flags are refused for agents
// whose sessions are copied as files.
func TestCaptureFlagsOnlyForExport(t *testing.T) {
	for _, flag := range []string{"--agent-entrypoint", "--state-dir"} {
		var stdout, stderr bytes.Buffer
		got := run([]string{"capture", "--agent", "pi", "--session", "x", flag, t.TempDir()}, &stdout, &stderr)
		if got != 2 || !strings.Contains(stderr.String(), "are for agents captured by export") {
			t.Errorf("%s with pi: exit %d, stderr %s", flag, got, stderr.String())
		}
	}
}

// fakeOpenCode is an opencode that prints a tested version and runs body
// for any other command.
func fakeOpenCode(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "opencode")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 1.18.33; exit 0; fi\n" + body + "\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCaptureOpenCodeByExport: the bundle holds what the CLI's export
// printed, byte for byte, after any banner; the manifest names the CLI,
// its version and the recorded cwd; the CLI ran in an isolated home with
// the copied database, and the source home is unchanged.
func TestCaptureOpenCodeByExport(t *testing.T) {
	const id = "ses_dd667972effeIl1TDXAj2ZWXpJ"
	export := "../../testdata/e2e/sessions/opencode@1.18.33/export.json"
	doc, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	data := filepath.Join(home, ".local", "share", "opencode")
	os.MkdirAll(data, 0o755)
	db := []byte("SQLite format 3\x00 session " + id)
	if err := os.WriteFile(filepath.Join(data, "opencode.db"), db, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(export)
	// The fake checks it was given the copy (its XDG data dir holds the
	// database, not the source home's) and the id.
	cli := fakeOpenCode(t, `[ "$1 $2" = "export `+id+`" ] || exit 3
case "$XDG_DATA_HOME" in `+home+`*) exit 4;; esac
grep -q `+id+` "$XDG_DATA_HOME/opencode/opencode.db" || exit 5
[ "$OPENCODE_DISABLE_AUTOUPDATE" = 1 ] || exit 6
echo "Exporting session: `+id+`"; cat `+abs)
	tmp := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"capture", "--agent", "opencode", "--home", home, "--session", id, "--store", filepath.Join(tmp, "store"),
		"--state-dir", filepath.Join(tmp, "state"), "--agent-entrypoint", cli}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	var line captureLine
	if err := json.Unmarshal(stdout.Bytes(), &line); err != nil || line.Bundle == nil || line.Manifest == nil {
		t.Fatalf("stdout %q: %v", stdout.String(), err)
	}
	m := line.Manifest
	if m.Via == nil || *m.Via != (capture.Via{Method: "export", Tool: "opencode", Version: "1.18.33"}) ||
		m.OriginCwd != "/tmp/pvisor-e2e/opencode/repo" || len(m.Files) != 1 || m.Files[0].Path != "pvisor-exports/"+id+".json" {
		t.Errorf("manifest %+v (via %+v)", m, m.Via)
	}
	got, _ := os.ReadFile(filepath.Join(*line.Bundle, capture.FilesDir, m.Files[0].Path))
	if !bytes.Equal(got, doc) {
		t.Errorf("the bundle's export differs from what the CLI printed (%d bytes, want %d)", len(got), len(doc))
	}
	if b, _ := os.ReadFile(filepath.Join(data, "opencode.db")); !bytes.Equal(b, db) {
		t.Errorf("the home's database changed")
	}
	if entries, _ := os.ReadDir(data); len(entries) != 1 {
		t.Errorf("the capture wrote into the home: %v", entries)
	}
}
