package result

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJournalRefusesUnfinishedCall(t *testing.T) {
	cases := []struct {
		name   string
		events [][2]string // event, call_id
		want   []string
	}{
		{"clean", [][2]string{{EventToolStarted, "a"}, {EventToolFinished, "a"}}, nil},
		{"unfinished", [][2]string{{EventToolStarted, "a"}, {EventToolFinished, "a"}, {EventToolStarted, "b"}}, []string{"b"}},
		{"two unfinished", [][2]string{{EventToolStarted, "z"}, {EventToolStarted, "b"}}, []string{"b", "z"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			j, err := OpenJournal(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range tc.events {
				if err := j.Append(ev[0], map[string]string{"call_id": ev[1]}); err != nil {
					t.Fatal(err)
				}
			}
			j.Close()
			j2, err := OpenJournal(dir)
			var amb *AmbiguousError
			if tc.want == nil {
				if err != nil {
					t.Fatalf("reopen: %v", err)
				}
				j2.Close()
				return
			}
			if !errors.As(err, &amb) {
				t.Fatalf("reopen: got %v, want AmbiguousError", err)
			}
			if d := cmp.Diff(tc.want, amb.Calls); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
		})
	}
}

func TestJournalRepairsTornTail(t *testing.T) {
	dir := t.TempDir()
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	j.Append(EventRunStarted, map[string]int{"n": 1})
	j.Close()
	path := filepath.Join(dir, JournalFile)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"position":{"journal":"x","offset":1},"event":{"version":5,"id":"tool_sta`)
	f.Close()

	j, err = OpenJournal(dir)
	if err != nil {
		t.Fatalf("torn tail should be repaired, got %v", err)
	}
	if err := j.Append(EventRunFinished, nil); err != nil {
		t.Fatal(err)
	}
	j.Close()
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], `"offset":1}`) || !strings.Contains(lines[2], `"name":"`+EventRunFinished+`"`) {
		t.Fatalf("journal after repair:\n%s", data)
	}
}

func TestJournalLockIsExclusive(t *testing.T) {
	dir := t.TempDir()
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := OpenJournal(dir); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open: got %v, want in-use error", err)
	}
}

func TestJournalRejectsForeignFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, JournalFile), []byte("{\"event\":\"x\"}\n"), 0o600)
	if _, err := OpenJournal(dir); err == nil || !strings.Contains(err.Error(), "unknown header") {
		t.Fatalf("got %v", err)
	}
}

func TestWriteFileIsPrivateAndAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	if err := WriteJSON(p, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temp files left behind: %v", ents)
	}
}

// A streamed file appears at its path only on Commit, and Abort leaves what
// the path held before; neither leaves its temp file behind.
func TestAtomicFileCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "prefix.jsonl")
	if err := os.WriteFile(p, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := CreateAtomic(p)
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("half"))
	if got, _ := os.ReadFile(p); string(got) != "old\n" {
		t.Fatalf("before Commit the path holds %q", got)
	}
	a.Abort()
	if got, _ := os.ReadFile(p); string(got) != "old\n" {
		t.Fatalf("after Abort the path holds %q", got)
	}
	a, err = CreateAtomic(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		a.Write([]byte("line\n"))
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	a.Abort() // after Commit: nothing
	if got, _ := os.ReadFile(p); string(got) != "line\nline\nline\n" {
		t.Fatalf("after Commit the path holds %q", got)
	}
	if err := a.Commit(); err == nil {
		t.Error("a second Commit succeeded")
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temp files left behind: %v", ents)
	}
}

func TestExitCodes(t *testing.T) {
	want := map[string]int{ConfigurationError: 2, TrajectoryError: 10, UnsupportedAgent: 11, UnsupportedVersion: 11,
		WorkspaceError: 20, ExecutorError: 30, AmbiguousExecution: 31, ContinuationError: 40, ModelRateLimit: 40, InternalError: 50,
		Interrupted: 130}
	for cat, code := range want {
		if got := ExitCode(&Failure{Category: cat}); got != code {
			t.Errorf("%s: exit %d, want %d", cat, got, code)
		}
	}
	if ExitCode(nil) != 0 {
		t.Error("success must exit 0")
	}
}

// A result line read back keeps what it said, an early failure's null
// quality included.
func TestResultRoundTrip(t *testing.T) {
	for _, early := range []bool{false, true} {
		r := New("r1", "codex")
		r.Fail(ConfigurationError, "bad")
		if early {
			r.MarkEarly()
		} else {
			r.SetPhase(PhasePrepared)
		}
		var back Result
		if err := json.Unmarshal(r.Line(), &back); err != nil {
			t.Fatal(err)
		}
		if string(back.Line()) != string(r.Line()) {
			t.Errorf("early=%v: %s\nread back as %s", early, r.Line(), back.Line())
		}
		if strings.Contains(string(r.Line()), `"quality":null`) != early {
			t.Errorf("early=%v: %s", early, r.Line())
		}
	}
}

// TestNewIDIsUUIDv4: ids are lower-case version 4, variant 10 UUIDs, and two
// are never the same.
func TestNewIDIsUUIDv4(t *testing.T) {
	shape := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := newID()
		if !shape.MatchString(id) {
			t.Fatalf("%q is not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("%q came twice", id)
		}
		seen[id] = true
	}
}
