package batch

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseAndResolveSteps(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      any
		n       int
		want    []int
		wantErr string
	}{
		{"list", []any{int64(1), int64(3)}, 5, []int{1, 3}, ""},
		{"all", "all", 3, []int{1, 2, 3}, ""},
		{"range", map[string]any{"from": int64(1), "to": int64(5), "every": int64(2)}, 6, []int{1, 3, 5}, ""},
		{"range to end", map[string]any{"from": int64(2)}, 4, []int{2, 3, 4}, ""},
		{"past end", []any{int64(1), int64(9)}, 5, nil, "after_steps 9 is past the last step"},
		{"range past end", map[string]any{"from": int64(1), "to": int64(9)}, 5, nil, "after_steps.to = 9 is past the last step"},
		{"zero", []any{int64(0)}, 5, nil, "not a step number"},
		{"twice", []any{int64(2), int64(2)}, 5, nil, "lists 2 twice"},
		{"word", "most", 5, nil, `only word allowed is "all"`},
		{"unknown key", map[string]any{"from": int64(1), "step": int64(2)}, 5, nil, `unknown key "step"`},
		{"missing", nil, 5, nil, "after_steps is required"},
		{"empty session", "all", 0, nil, "no complete step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSteps(tc.in)
			var got []int
			if err == nil {
				got, err = s.resolve(tc.n)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShardsAreDisjointAndCoverAll(t *testing.T) {
	var runs []*Run
	for i := range 23 {
		runs = append(runs, &Run{Index: i, ID: string(rune('a' + i))})
	}
	for _, n := range []int{1, 2, 3, 5, 23, 30} {
		seen := map[string]int{}
		for i := range n {
			for _, r := range (Shard{I: i, N: n}).Select(runs) {
				seen[r.ID]++
			}
		}
		if len(seen) != len(runs) {
			t.Errorf("n=%d: shards cover %d of %d runs", n, len(seen), len(runs))
		}
		for id, k := range seen {
			if k != 1 {
				t.Errorf("n=%d: run %s is in %d shards", n, id, k)
			}
		}
	}
}

func TestShardFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, tc := range []struct {
		name    string
		getenv  func(string) string
		n       int
		want    Shard
		ok      bool
		wantErr string
	}{
		{"none", env(), 0, Shard{}, false, ""},
		{"slurm", env("SLURM_ARRAY_TASK_ID", "2", "SLURM_ARRAY_TASK_COUNT", "4"), 0, Shard{2, 4}, true, ""},
		{"slurm without count", env("SLURM_ARRAY_TASK_ID", "2"), 0, Shard{}, true, "SLURM_ARRAY_TASK_COUNT is not"},
		{"k8s", env("JOB_COMPLETION_INDEX", "1"), 3, Shard{1, 3}, true, ""},
		{"k8s without n", env("JOB_COMPLETION_INDEX", "1"), 0, Shard{}, true, "shard count is unknown"},
		{"k8s out of range", env("JOB_COMPLETION_INDEX", "3"), 3, Shard{}, true, "0 <= I < N"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ok, err := ShardFromEnv(tc.getenv, tc.n)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || ok != tc.ok || s != tc.want {
				t.Errorf("got %v %v %v, want %v %v", s, ok, err, tc.want, tc.ok)
			}
		})
	}
}
