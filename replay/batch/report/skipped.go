package report

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pvisor/pvisor/replay/batch"
	"github.com/pvisor/pvisor/run/userfile"
)

// Skipped is a file under .batch/runs/ that is not a run record the report
// can use: a torn write, a symlink, something else. The report names each
// one instead of silently counting fewer runs.
type Skipped struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// MaxRecordBytes caps one run record (its v3 result included).
const MaxRecordBytes = 16 << 20

// readRecord reads one record as a user-named file: a regular file, not a
// symlink (a record points nowhere else), at most MaxRecordBytes, whole
// JSON with a run id and a result.
func readRecord(path string) (*batch.Record, string) {
	data, err := userfile.ReadAll(path, userfile.Policy{What: "run record", Max: MaxRecordBytes})
	if err != nil {
		return nil, err.Error()
	}
	var rec batch.Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Sprintf("not a whole run record (%v): torn by a crash? run 'pvisor batch run' again to redo that run", err)
	}
	if rec.RunID == "" || len(rec.Result) == 0 {
		return nil, "no run_id or no result: not a run record"
	}
	if want := strings.TrimSuffix(filepath.Base(path), ".json"); rec.RunID != want {
		return nil, fmt.Sprintf("holds run %s, not %s", rec.RunID, want)
	}
	return &rec, ""
}

// skippedLine is the sentence report.md and the CLI print about them.
func skippedLine(s []Skipped) string {
	if len(s) == 0 {
		return ""
	}
	names := make([]string, len(s))
	for i, k := range s {
		names[i] = k.File + " (" + k.Reason + ")"
	}
	return fmt.Sprintf("%d record file(s) skipped, not counted as runs: %s", len(s), strings.Join(names, "; "))
}

// SkippedLine says which record files Build skipped and why ("" for none).
func (r *Report) SkippedLine() string { return skippedLine(r.Skipped) }
