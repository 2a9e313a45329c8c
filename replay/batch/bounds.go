package batch

import "fmt"

// The bounds of one batch file (README "Limits"). Every shard expands the
// whole file, so the bounds hold per file whatever the shard count: past
// them the file is refused before anything runs, as soon as the count is
// known (a repeats value at once, a glob before any match is decoded), so
// a file cannot make the expansion hold millions of runs in memory.
const (
	// MaxRuns bounds the runs a file expands to (about 160 MB for the
	// expansion of a dry run at the bound).
	MaxRuns = 100_000
	// MaxTrajectories bounds the session files a file's globs match in
	// all; each one is decoded once to count its steps.
	MaxTrajectories = 10_000
)

// maxRuns and maxTrajectories are the bounds in force (tests lower them).
var maxRuns, maxTrajectories = MaxRuns, MaxTrajectories

func tooMany(where, what string) error {
	return fmt.Errorf("%s: %s: a batch file expands to at most %d runs; split the study into several files (each with its own output_dir)", where, what, maxRuns)
}

// checkMatches refuses a glob whose matches would take the file past
// MaxTrajectories session files.
func checkMatches(where, pattern string, n int, seen stepCounter) error {
	if len(seen)+n > maxTrajectories {
		return fmt.Errorf("%s: trajectories %q matches %d files (%d already counted): a batch file takes at most %d session files; narrow the glob or split the study into several files",
			where, pattern, n, len(seen), maxTrajectories)
	}
	return nil
}
