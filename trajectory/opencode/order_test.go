package opencode

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory/formattest"
)

// A recorded order is followed only when ripgrep could have produced it
// from the fresh results; anything else shows ripgrep's own order.
func TestOrderFollowsOnlyPossibleResults(t *testing.T) {
	rec := func(paths ...string) []recordedFile {
		var out []recordedFile
		for _, p := range paths {
			out = append(out, recordedFile{path: p})
		}
		return out
	}
	globs := []struct {
		name        string
		fresh, want []string
		recorded    []recordedFile
	}{
		{"same set", []string{"/a", "/b"}, []string{"/b", "/a"}, rec("/b", "/a")},
		{"new file", []string{"/a", "/b", "/c"}, []string{"/a", "/b", "/c"}, rec("/b", "/a")},
		{"missing file", []string{"/a"}, []string{"/a"}, rec("/b")},
		{"duplicate", []string{"/a", "/b"}, []string{"/a", "/b"}, rec("/a", "/a")},
		{"nothing recorded", []string{"/a"}, []string{"/a"}, nil},
	}
	for _, g := range globs {
		if got := orderGlob(g.fresh, g.recorded); !cmp.Equal(got, g.want) {
			t.Errorf("glob %s: %v, want %v", g.name, got, g.want)
		}
	}
	m := func(p string, lines ...int) []match {
		var out []match
		for _, l := range lines {
			out = append(out, match{path: p, line: l})
		}
		return out
	}
	fresh := append(m("/a", 1, 2), m("/b", 3)...)
	greps := []struct {
		name     string
		recorded []recordedFile
		want     []match
	}{
		{"files swapped", []recordedFile{{"/b", []int{3}}, {"/a", []int{1, 2}}}, append(m("/b", 3), m("/a", 1, 2)...)},
		{"a line differs", []recordedFile{{"/b", []int{4}}, {"/a", []int{1, 2}}}, fresh},
		{"a file is missing", []recordedFile{{"/a", []int{1, 2}}}, fresh},
		{"a file is cut before the last", []recordedFile{{"/a", []int{1}}, {"/b", []int{3}}}, fresh},
	}
	for _, g := range greps {
		if got := orderGrep(fresh, g.recorded); !cmp.Equal(got, g.want, cmp.AllowUnexported(match{})) {
			t.Errorf("grep %s: %v, want %v", g.name, got, g.want)
		}
	}
}

// Run events do not record the session directory; it is taken from a
// file tool's path and title.
func TestCwdOfRunEvents(t *testing.T) {
	for file, want := range map[string]string{
		"testdata/ortus_run_session2.jsonl":                         "/work/probe",
		"../../testdata/e2e/sessions/opencode@1.18.33/stdout.jsonl": "/tmp/pvisor-e2e/opencode/repo",
		corpusDir + "/takopi_opencode_stream_success.jsonl":         "",
		"testdata/export_ortus_session2.json":                       "/work/probe",
	} {
		_, tr := formattest.DecodeFile(t, New(), file)
		if tr.Cwd != want {
			t.Errorf("%s: Cwd %q, want %q", file, tr.Cwd, want)
		}
	}
}
