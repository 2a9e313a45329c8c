package batch

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is one share of a batch: runs whose expansion index is I modulo N.
// Expansion order is fixed by the file, so every machine computes the same
// disjoint shares, and together they cover every run exactly once.
type Shard struct{ I, N int }

// Select returns the runs of this shard (all of them when N <= 1).
func (s Shard) Select(runs []*Run) []*Run {
	if s.N <= 1 {
		return runs
	}
	var out []*Run
	for _, r := range runs {
		if r.Index%s.N == s.I {
			out = append(out, r)
		}
	}
	return out
}

func (s Shard) String() string {
	if s.N <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// ParseShard reads "I/N" (0 <= I < N).
func ParseShard(v string) (Shard, error) {
	i, n, ok := strings.Cut(v, "/")
	if !ok {
		return Shard{}, fmt.Errorf("--shard %q: want I/N, such as 0/4", v)
	}
	if !plainDigits(i) || !plainDigits(n) {
		return Shard{}, fmt.Errorf("--shard %q: want I/N in plain decimal digits (no sign, space or leading zero), such as 0/4", v)
	}
	s := Shard{}
	var err1, err2 error
	s.I, err1 = strconv.Atoi(i)
	s.N, err2 = strconv.Atoi(n)
	if err1 != nil || err2 != nil || s.N < 1 || s.I < 0 || s.I >= s.N {
		return Shard{}, fmt.Errorf("--shard %q: want I/N with 0 <= I < N", v)
	}
	return s, nil
}

// ShardFromEnv finds the shard a cluster engine assigned: Slurm array
// tasks (SLURM_ARRAY_TASK_ID, with SLURM_ARRAY_TASK_COUNT) or a Kubernetes
// Indexed Job (JOB_COMPLETION_INDEX, with n from the file or --shards).
// ok is false when neither is set.
func ShardFromEnv(getenv func(string) string, n int) (Shard, bool, error) {
	if id := getenv("SLURM_ARRAY_TASK_ID"); id != "" {
		count := getenv("SLURM_ARRAY_TASK_COUNT")
		if count == "" {
			return Shard{}, true, fmt.Errorf("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not (submit with --array=0-(N-1))")
		}
		s, err := ParseShard(id + "/" + count)
		if err != nil {
			return Shard{}, true, fmt.Errorf("SLURM_ARRAY_TASK_ID=%s, SLURM_ARRAY_TASK_COUNT=%s: %v", id, count, err)
		}
		return s, true, nil
	}
	if idx := getenv("JOB_COMPLETION_INDEX"); idx != "" {
		if n < 1 {
			return Shard{}, true, fmt.Errorf("JOB_COMPLETION_INDEX is set but the shard count is unknown: set [batch] shards or --shards")
		}
		s, err := ParseShard(idx + "/" + strconv.Itoa(n))
		if err != nil {
			return Shard{}, true, fmt.Errorf("JOB_COMPLETION_INDEX=%s: %v", idx, err)
		}
		return s, true, nil
	}
	return Shard{}, false, nil
}

// plainDigits: strconv.Atoi takes "+1" and "00"; a shard index that a
// cluster engine writes never has a sign or a leading zero, so one typed
// that way is refused rather than read as another shard.
func plainDigits(v string) bool {
	if v == "" || len(v) > 1 && v[0] == '0' {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
