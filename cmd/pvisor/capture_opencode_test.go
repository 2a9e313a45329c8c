package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay/capture"
	"github.com/pvisor/pvisor/trajectory/opencode/store/storetest"
)

// TestCaptureOpenCodeRefusals: an OpenCode capture that cannot be made
// exits with its code, prints a result line, and leaves no store and
// nothing in the state root but its version cache. The CLI here is a
// script: the real one's export is the e2e test's (TestCaptureOpenCode).
func TestCaptureOpenCodeRefusals(t *testing.T) {
	const id = "ses_dd667972effeIl1TDXAj2ZWXpJ"
	withDB, empty := openCodeHome(t, "1.18.33", ""), t.TempDir()
	data := filepath.Join(withDB, ".local", "share", "opencode")
	db, _ := os.ReadFile(filepath.Join(data, "opencode.db"))
	// Another session's database; and one whose schema pvisor does not read,
	// so the CLI exports (the id found by its bytes, then checked).
	otherDB := openCodeHome(t, "1.18.20", "")
	otherSchema := openCodeHome(t, "1.18.33", "ALTER TABLE session ADD COLUMN color text")
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
		{"export fails", []string{"--home", otherSchema, "--session", id, "--agent-entrypoint", failing}, 10, "trajectory_error"},
		{"export of another session", []string{"--home", otherSchema, "--session", id, "--agent-entrypoint", wrongID}, 10, "trajectory_error"},
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
		t.Errorf("the home's database changed")
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

// openCodeHome is a HOME whose OpenCode database is one the real CLI
// filled by importing the e2e recording of version (see
// trajectory/opencode/store/testdata), changed by the SQL alter.
func openCodeHome(t *testing.T, version, alter string) string {
	t.Helper()
	home := t.TempDir()
	data := filepath.Join(home, ".local", "share", "opencode")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(data, "opencode.db")
	storetest.DB(t, version, p)
	if alter != "" {
		db, err := sql.Open("sqlite", p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(alter); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	return home
}

// TestCaptureOpenCode: pvisor reads the session from a copy of the
// home's database and stores what `opencode export` prints, byte for byte,
// without running the CLI (via database-read); a database of another
// schema is exported by the CLI instead (via export), which ran in an
// isolated home with the copied database. The source home is unchanged.
func TestCaptureOpenCode(t *testing.T) {
	const id = "ses_dd667972effeIl1TDXAj2ZWXpJ"
	want, err := os.ReadFile("../../trajectory/opencode/store/testdata/1.18.33/export.json")
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("../../trajectory/opencode/store/testdata/1.18.33/export.json")
	for _, tc := range []struct {
		name, alter, cli, via string
	}{
		{"direct", "", `exit 9`, "database-read"},
		// The fake checks it was given the copy (its XDG data dir holds the
		// database, not the source home's) and the id.
		{"other schema", "ALTER TABLE session ADD COLUMN color text", `[ "$1 $2" = "export ` + id + `" ] || exit 3
case "$XDG_DATA_HOME" in HOME*) exit 4;; esac
grep -q ` + id + ` "$XDG_DATA_HOME/opencode/opencode.db" || exit 5
[ "$OPENCODE_DISABLE_AUTOUPDATE" = 1 ] || exit 6
echo "Exporting session: ` + id + `"; cat ` + abs, "export"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := openCodeHome(t, "1.18.33", tc.alter)
			data := filepath.Join(home, ".local", "share", "opencode")
			db, _ := os.ReadFile(filepath.Join(data, "opencode.db"))
			cli := fakeOpenCode(t, strings.ReplaceAll(tc.cli, "HOME*", home+"*"))
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
			if m.Via == nil || *m.Via != (capture.Via{Method: tc.via, Tool: "opencode", Version: "1.18.33"}) ||
				m.OriginCwd != "/tmp/ocfix/1.18.33/ws" || len(m.Files) != 1 || m.Files[0].Path != "pvisor-exports/"+id+".json" {
				t.Errorf("manifest %+v (via %+v)", m, m.Via)
			}
			got, _ := os.ReadFile(filepath.Join(*line.Bundle, capture.FilesDir, m.Files[0].Path))
			if !bytes.Equal(got, want) {
				t.Errorf("the bundle's export differs from what the CLI prints (%d bytes, want %d)", len(got), len(want))
			}
			if b, _ := os.ReadFile(filepath.Join(data, "opencode.db")); !bytes.Equal(b, db) {
				t.Errorf("the home's database changed")
			}
			if entries, _ := os.ReadDir(data); len(entries) != 1 {
				t.Errorf("the capture wrote into the home: %v", entries)
			}
		})
	}
}
