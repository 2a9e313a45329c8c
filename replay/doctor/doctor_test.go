package doctor

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pvisor/pvisor/replay/tested"
)

// TestBundledSessionsAreRecordings: each bundled session is byte for byte a
// recording in testdata/e2e/sessions made by the oldest tested release, so
// the doctor checks exactly what the e2e matrix checks.
func TestBundledSessionsAreRecordings(t *testing.T) {
	got := Agents()
	if !slices.Equal(got, []string{"claude-code", "codex", "opencode", "pi"}) {
		t.Fatalf("bundled agents %v", got)
	}
	for _, agent := range got {
		oldest := tested.Of(agent)[0].Version
		rec := filepath.Join("..", "..", "testdata", "e2e", "sessions", agent+"@"+oldest)
		entries, err := sessions.ReadDir("sessions/" + agent)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Files map[string]string `json:"files"`
		}
		raw, _ := sessions.ReadFile("sessions/" + agent + "/manifest.json")
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		want := []string{"manifest.json", "repo.tar.gz", m.Files["session"]}
		slices.Sort(want)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
			b, _ := sessions.ReadFile("sessions/" + agent + "/" + e.Name())
			r, err := os.ReadFile(filepath.Join(rec, e.Name()))
			if err != nil || !bytes.Equal(b, r) {
				t.Errorf("bundled %s/%s differs from the recording in %s (%v): copy it again", agent, e.Name(), rec, err)
			}
		}
		if !slices.Equal(names, want) {
			t.Errorf("bundled %s holds %v, want %v", agent, names, want)
		}
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		rows []Row
		want int
	}{
		{[]Row{{Status: StatusOK}, {Status: StatusNotFound}}, 0},
		{[]Row{{Status: StatusNotFound}}, 11},
		{nil, 11},
		{[]Row{{Status: StatusOK}, {Status: StatusFailed, ExitCode: 40}, {Status: StatusFailed, ExitCode: 11}}, 40},
		{[]Row{{Status: StatusFailed}}, 50},
	} {
		if got := ExitCode(tc.rows); got != tc.want {
			t.Errorf("ExitCode(%+v) = %d, want %d", tc.rows, got, tc.want)
		}
	}
}

func TestCheckRefusesBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Agents: []string{"mini-swe-agent"}},
		{Agents: []string{"nope"}},
		{Entrypoint: "/bin/true"},
		{Agents: []string{"codex", "pi"}, Entrypoint: "/bin/true"},
	} {
		if _, err := Check(t.Context(), o); err == nil {
			t.Errorf("Check(%+v) ran", o)
		}
	}
}

// TestNotFound: an agent missing from PATH is listed, and a failure only
// when it was asked for.
func TestNotFound(t *testing.T) {
	rows, err := Check(t.Context(), Options{Path: t.TempDir(), Self: "/nonexistent"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Status != StatusNotFound || r.Error == "" {
			t.Errorf("row %+v", r)
		}
	}
	if ExitCode(rows) != 11 {
		t.Errorf("exit %d with nothing found", ExitCode(rows))
	}
	rows, _ = Check(t.Context(), Options{Agents: []string{"pi-agent"}, Path: t.TempDir(), Self: "/nonexistent"})
	if len(rows) != 1 || rows[0].Agent != "pi" || rows[0].Status != StatusFailed || rows[0].ExitCode != 11 {
		t.Errorf("rows %+v", rows)
	}
}
