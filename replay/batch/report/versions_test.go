package report

import (
	"encoding/json"
	"slices"
	"sort"
	"testing"

	"github.com/pvisor/pvisor/replay/batch"
	"github.com/pvisor/pvisor/result"
)

// versionRun is a claude-code run after step 1 whose result names its CLI.
func versionRun(t *testing.T, id, entry, version, recorded string, failed bool) Run {
	t.Helper()
	res := result.New(id, "claude-code")
	if entry != "" {
		res.Agent.Entrypoint = &entry
	}
	if version != "" {
		res.Agent.Version = &version
		res.Metadata["agent_version_check"] = map[string]any{"version": version, "in_range": true}
	} else if recorded != "" {
		res.Agent.Version = &recorded // what a run holds before its CLI is asked
	}
	if recorded != "" {
		res.Metadata["trajectory_agent_version"] = recorded
	}
	if failed {
		res.Fail(result.ContinuationError, "boom")
	}
	line, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	rec := batch.Record{RunID: id, Agent: "claude-code", AfterStep: 1, Result: line}
	if failed {
		rec.ExitCode = 40
	}
	r := Run{Record: rec, Upstream: "recorded"}
	if failed {
		r.failure = result.ContinuationError
	}
	r.AgentVersion, r.RecordedVersion = versionsOf(res)
	return r
}

func TestGroupsByContinuingRelease(t *testing.T) {
	runs := []Run{
		versionRun(t, "a", "/cli/new/claude", "2.1.332", "2.1.197", false),
		versionRun(t, "b", "/cli/old/claude", "2.1.40", "2.1.197", false),
		// Failed before the CLI said its release: the same CLI's release.
		versionRun(t, "c", "/cli/new/claude", "", "2.1.197", true),
		versionRun(t, "d", "/cli/new/claude", "2.1.332", "2.1.265", false),
		// Never resolved its CLI: no release, a group of its own.
		versionRun(t, "e", "", "", "2.1.197", true),
		// A CLI that gave two releases decides nothing for its silent run.
		versionRun(t, "f", "/cli/moved/claude", "2.1.265", "", false),
		versionRun(t, "g", "/cli/moved/claude", "2.1.332", "", false),
		versionRun(t, "h", "/cli/moved/claude", "", "", true),
	}
	inferVersions(runs)
	sort.SliceStable(runs, func(i, j int) bool { return compareVersions(runs[i].AgentVersion, runs[j].AgentVersion) < 0 })
	got := map[string]string{}
	for _, r := range runs {
		got[r.RunID] = r.AgentVersion
	}
	want := map[string]string{"a": "2.1.332", "b": "2.1.40", "c": "2.1.332", "d": "2.1.332", "e": "", "f": "2.1.265", "g": "2.1.332", "h": ""}
	for id, v := range want {
		if got[id] != v {
			t.Errorf("run %s: release %q, want %q", id, got[id], v)
		}
	}
	groups := aggregate(runs)
	type row struct {
		version  string
		runs     int
		failed   int
		recorded []string
	}
	wantGroups := []row{{"", 2, 2, []string{"2.1.197"}}, {"2.1.40", 1, 0, []string{"2.1.197"}}, {"2.1.265", 1, 0, []string{}},
		{"2.1.332", 4, 1, []string{"2.1.197", "2.1.265"}}}
	if len(groups) != len(wantGroups) {
		t.Fatalf("%d groups, want %d: %+v", len(groups), len(wantGroups), groups)
	}
	for i, w := range wantGroups {
		g := groups[i]
		if g.AgentVersion != w.version || g.Runs != w.runs || g.Failed != w.failed || !slices.Equal(g.RecordedVersions, w.recorded) {
			t.Errorf("group %d: release %q, %d runs, %d failed, recorded %v; want %+v", i, g.AgentVersion, g.Runs, g.Failed, g.RecordedVersions, w)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"2.1.40", "2.1.332", -1}, {"2.1.332", "2.1.40", 1}, {"1.6.0", "1.6.0", 0}, {"", "0.1.0", -1}, {"v1.2.0", "1.10.0", -1}, {"dev", "main", -1},
	} {
		if got := compareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
