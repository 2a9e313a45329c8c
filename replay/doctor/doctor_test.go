package doctor

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay/tested"
)

// TestBundledSessionsAreRecordings: each bundled session is byte for byte a
// recording made by a tested release (for the CLIs testdata/e2e/sessions of
// the oldest release, for Pi those of the oldest and the newest release (one
// per generation); for mini-swe-agent the recording of each generation in
// trajectory/miniswe/testdata/recorded), so the doctor checks exactly what
// the e2e matrix checks.
func TestBundledSessionsAreRecordings(t *testing.T) {
	got := Agents()
	if !slices.Equal(got, []string{"claude-code", "codex", "copilot", "kimi", "mini-swe-agent", "opencode", "pi"}) {
		t.Fatalf("bundled agents %v", got)
	}
	for _, agent := range got {
		if agent == "mini-swe-agent" {
			var versions []string
			for _, rel := range tested.Of(agent) {
				versions = append(versions, rel.Version)
				checkBundled(t, agent, rel.Version,
					filepath.Join("..", "..", "trajectory", "miniswe", "testdata", "recorded", rel.Version), false)
			}
			entries, _ := fs.ReadDir(mustRecording(t, agent), ".")
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if !slices.Equal(names, versions) {
				t.Errorf("bundled %s recordings %v, want one per tested release %v", agent, names, versions)
			}
			continue
		}
		if agent == "pi" {
			// One recording per generation (0.x, 1.x): the oldest tested
			// release's and the newest's, which writes system messages.
			rels := tested.Of(agent)
			want := []string{rels[0].Version, rels[len(rels)-1].Version}
			entries, _ := fs.ReadDir(mustRecording(t, agent), ".")
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
				checkBundled(t, agent, e.Name(), filepath.Join("..", "..", "testdata", "e2e", "sessions", agent+"@"+e.Name()), true)
			}
			slices.SortFunc(names, func(a, b string) int { return tested.MustSemver(a).Compare(tested.MustSemver(b)) })
			if !slices.Equal(names, want) {
				t.Errorf("bundled %s recordings %v, want the oldest and newest tested releases' %v", agent, names, want)
			}
			continue
		}
		oldest := tested.Of(agent)[0].Version
		checkBundled(t, agent, ".", filepath.Join("..", "..", "testdata", "e2e", "sessions", agent+"@"+oldest), true)
	}
}

// checkBundled compares the bundled dir with the recording rec: the session
// and repo always, the manifest when withManifest (mini's recordings have
// none: the doctor's names the files).
func checkBundled(t *testing.T, agent, dir, rec string, withManifest bool) {
	t.Helper()
	bundled := mustRecording(t, agent)
	entries, err := fs.ReadDir(bundled, dir)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Files map[string]string `json:"files"`
	}
	raw, _ := fs.ReadFile(bundled, path.Join(dir, "manifest.json"))
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	want := []string{"manifest.json", "repo.tar.gz", m.Files["session"]}
	slices.Sort(want)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if e.Name() == "manifest.json" && !withManifest {
			continue
		}
		b, _ := fs.ReadFile(bundled, path.Join(dir, e.Name()))
		r, err := os.ReadFile(filepath.Join(rec, e.Name()))
		if err != nil || !bytes.Equal(b, r) {
			t.Errorf("bundled %s recording %s/%s differs from the recording in %s (%v): copy it again", agent, dir, e.Name(), rec, err)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("bundled %s recording %s holds %v, want %v", agent, dir, names, want)
	}
}

// TestRecordingForMini: the doctor continues the recording of the installed
// mini generation (its releases cannot continue each other's format), the
// newest for a generation it has none of, and says so when the entrypoint
// is not mini.
func TestRecordingForMini(t *testing.T) {
	for _, tc := range []struct{ prints, want, err string }{
		{"mini-swe-agent 1.17.5", "1.17.5", ""},
		{"mini-swe-agent 1.2.0", "1.17.5", ""},
		{"mini-swe-agent 2.4.6", "2.4.6", ""},
		{"mini-swe-agent 3.0.1", "2.4.6", ""},
		{"Python 3.11.7", "", "not the way mini-swe-agent prints its version"},
	} {
		t.Run(tc.prints, func(t *testing.T) {
			dir := t.TempDir()
			py := filepath.Join(dir, "python")
			mini := filepath.Join(dir, "mini")
			if err := os.WriteFile(py, []byte("#!/bin/sh\necho '"+tc.prints+"'\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(mini, []byte("#!"+py+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			got, err := recordingFor(t.Context(), "mini-swe-agent", mini, dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %q, %v; want error saying %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if got, err := recordingFor(t.Context(), "codex", "/nonexistent", t.TempDir()); err != nil || got != "." {
		t.Errorf("codex: %q, %v (one recording: nothing to probe)", got, err)
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
		{Agents: []string{"swe-agent"}},
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

func mustRecording(t *testing.T, agent string) fs.FS {
	t.Helper()
	rec, err := recording(agent)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
