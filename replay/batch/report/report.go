// Package report aggregates the runs of one or more batch output
// directories (shards merge by run id) into what a researcher reads:
// next-action agreement, text similarity and observation drift per agent ×
// upstream × boundary, failures by category and wall time, as JSON,
// Markdown and a self-contained HTML page with SVG plots.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/pvisor/pvisor/replay/batch"
	"github.com/pvisor/pvisor/result"
)

// SchemaVersion names the report.json shape.
const SchemaVersion = "pvisor.batch-report/v1"

// Report is report.json.
type Report struct {
	SchemaVersion string `json:"schema_version"`
	// PvisorVersion is the pvisor that built the report; RunsBy lists the
	// pvisor versions that ran its runs (their records' pvisor_version).
	PvisorVersion string   `json:"pvisor_version,omitempty"`
	RunsBy        []string `json:"runs_by_pvisor"`
	Sources       []string `json:"sources"`
	Runs          []Run    `json:"runs"`
	Groups        []Group  `json:"groups"`
	// Comparisons set groups at the same agent and boundary against each
	// other (model A vs model B, or two CLI releases).
	Comparisons []Comparison `json:"comparisons,omitempty"`
	// linkBase is the directory the rendered report lands in (Write):
	// run links are relative to it.
	linkBase string
	// Skipped lists record files that are not usable records.
	Skipped []Skipped `json:"skipped_records"`
}

// Run is one run with what the report reads from its outputs.
type Run struct {
	batch.Record
	Upstream string `json:"upstream"` // "recorded", "anthropic/model", "default"
	// AgentVersion is the release of the CLI that continued, as the CLI
	// gave it (see versions.go, also for runs that never asked it), and
	// RecordedVersion the release that wrote the session.
	AgentVersion    string      `json:"agent_version"`
	RecordedVersion string      `json:"recorded_version"`
	NextAction      *NextAction `json:"next_action"`
	Observations    *Drift      `json:"observations"`
	// Failure is the run's failure, category and message, as its result
	// line gives them; nil for a run that succeeded.
	Failure *RunFailure `json:"failure,omitempty"`
	// ResultJSON is the run's result.json under its batch output dir, or
	// its batch record when the run wrote none (it failed before it had an
	// output dir).
	ResultJSON string `json:"result_json"`
	failure    string
	// Verify is the run's grading (metadata.verify), Diff its workspace
	// diff, Tokens the usage the model service reported and Cost its
	// price (only when the study gave prices); nil when unknown.
	Verify *Verify  `json:"verify,omitempty"`
	Diff   *RunDiff `json:"workspace_diff,omitempty"`
	Tokens *Tokens  `json:"tokens,omitempty"`
	Cost   *float64 `json:"cost,omitempty"`
	// Actions are for the HTML page only: each run's
	// next-action-comparison.json has them, and a study of many runs
	// keeps report.json small.
	Actions *Actions `json:"-"`
	// Agreement says how many actions after the boundary followed the
	// recording (metadata.action_agreement).
	Agreement *Agreement `json:"action_agreement,omitempty"`
}

// RunFailure is a failed run's category and message.
type RunFailure struct {
	Category string `json:"category"`
	Message  string `json:"message"`
}

// NextAction is the part of next-action-comparison.json the study needs.
type NextAction struct {
	ToolNamesEqual bool     `json:"tool_names_equal"`
	ExactTool      bool     `json:"exact_tool"` // same names, count and arguments
	TextSimilarity *float64 `json:"text_similarity"`
}

// Drift counts observation-comparison.json entries: identical, identical
// once run-to-run fields are masked, different.
type Drift struct {
	Calls           int `json:"calls"`
	Exact           int `json:"exact"`
	NormalizedExact int `json:"normalized_exact"`
	Different       int `json:"different"`
}

// Group aggregates the runs of one agent × continuing CLI release ×
// upstream × boundary.
type Group struct {
	Agent              string         `json:"agent"`
	Upstream           string         `json:"upstream"`
	AgentVersion       string         `json:"agent_version"`     // "" when no run of the group knows it
	RecordedVersions   []string       `json:"recorded_versions"` // of the sessions, distinct, in order
	AfterStep          int            `json:"after_step"`
	Runs               int            `json:"runs"`
	Failed             int            `json:"failed"`
	FailuresByCategory map[string]int `json:"failures_by_category"`
	Compared           int            `json:"compared"` // runs with a next-action comparison
	ToolNameAgreement  *float64       `json:"tool_name_agreement"`
	ExactToolAgreement *float64       `json:"exact_tool_agreement"`
	// Wilson 95% intervals of the two agreements, over Compared runs.
	ToolNameAgreementCI  *Interval     `json:"tool_name_agreement_ci"`
	ExactToolAgreementCI *Interval     `json:"exact_tool_agreement_ci"`
	TextSimilarity       *Distribution `json:"text_similarity"`
	Observations         Drift         `json:"observations"`
	DriftShares          *Shares       `json:"drift_shares"`
	WallMS               Distribution  `json:"wall_ms"`
	// Model is the [[models]] name of the group's runs ("" without).
	Model string `json:"model,omitempty"`
	// Verified runs ran a verify command; VerifyPass is the share that
	// passed, with its Wilson interval; Verdicts counts each verdict.
	Verified     int            `json:"verified,omitempty"`
	VerifyPass   *float64       `json:"verify_pass_share,omitempty"`
	VerifyPassCI *Interval      `json:"verify_pass_ci,omitempty"`
	Verdicts     map[string]int `json:"verdicts,omitempty"`
	// Tokens sums the usage of the WithTokens runs that reported any; Cost
	// their price, when every one of them has prices.
	WithTokens int `json:"runs_with_tokens,omitempty"`
	// AgreeingActions is the distribution of the runs' leading actions
	// whose tool names follow the recording (ActionAgreement.ToolsPrefix).
	AgreeingActions *Distribution `json:"agreeing_actions,omitempty"`
	Tokens          *Tokens       `json:"tokens,omitempty"`
	Cost            *float64      `json:"cost,omitempty"`
	// ExactToolMatches counts the compared runs whose next action had the
	// recorded tools exactly (the k of ExactToolAgreement).
	ExactToolMatches int `json:"exact_tool_matches"`
}

// Shares are Drift as fractions of the calls, each with its Wilson 95%
// interval (which takes the calls as independent; calls of one run are
// not quite, so read them as a lower bound on the uncertainty).
type Shares struct {
	Exact             float64  `json:"exact"`
	NormalizedExact   float64  `json:"normalized_exact"`
	Different         float64  `json:"different"`
	ExactCI           Interval `json:"exact_ci"`
	NormalizedExactCI Interval `json:"normalized_exact_ci"`
	DifferentCI       Interval `json:"different_ci"`
}

// Distribution summarises values; Histogram has ten bins over [0, 1] and is
// set only for similarities.
type Distribution struct {
	N         int     `json:"n"`
	Min       float64 `json:"min"`
	Median    float64 `json:"median"`
	Mean      float64 `json:"mean"`
	Max       float64 `json:"max"`
	Histogram []int   `json:"histogram,omitempty"`
}

// Build reads the records under each dir (a batch output dir). A run id
// found in several dirs is taken from the first.
func Build(dirs []string) (*Report, error) {
	rep := &Report{SchemaVersion: SchemaVersion, Sources: dirs, Runs: []Run{}, Groups: []Group{}, RunsBy: []string{}, Skipped: []Skipped{}}
	seen := map[string]bool{}
	for _, dir := range dirs {
		entries, err := os.ReadDir(batch.RecordsDir(dir))
		if err != nil {
			return nil, fmt.Errorf("%s is not a batch output dir (%v); give the output_dir of 'pvisor batch run'", dir, err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			path := filepath.Join(batch.RecordsDir(dir), e.Name())
			rec, why := readRecord(path)
			if why != "" {
				rep.Skipped = append(rep.Skipped, Skipped{File: path, Reason: why})
				continue
			}
			if seen[rec.RunID] {
				continue
			}
			seen[rec.RunID] = true
			rep.Runs = append(rep.Runs, readRun(dir, rec))
		}
	}
	inferVersions(rep.Runs)
	for _, r := range rep.Runs {
		if !slices.Contains(rep.RunsBy, r.PvisorVersion) {
			rep.RunsBy = append(rep.RunsBy, r.PvisorVersion)
		}
	}
	slices.SortFunc(rep.RunsBy, compareVersions) // "" (records from before the field) first
	for i, v := range rep.RunsBy {
		rep.RunsBy[i] = orDash(v)
	}
	sort.Slice(rep.Runs, func(i, j int) bool {
		a, b := rep.Runs[i], rep.Runs[j]
		if a.Agent != b.Agent {
			return a.Agent < b.Agent
		}
		if a.Upstream != b.Upstream {
			return a.Upstream < b.Upstream
		}
		if c := compareVersions(a.AgentVersion, b.AgentVersion); c != 0 {
			return c < 0
		}
		if a.AfterStep != b.AfterStep {
			return a.AfterStep < b.AfterStep
		}
		if a.Trajectory != b.Trajectory {
			return a.Trajectory < b.Trajectory
		}
		if a.Repeat != b.Repeat {
			return a.Repeat < b.Repeat
		}
		return a.RunID < b.RunID
	})
	rep.Groups = aggregate(rep.Runs)
	rep.Comparisons = compare(rep.Groups)
	return rep, nil
}

func readRun(dir string, rec *batch.Record) Run {
	r := Run{Record: *rec, Upstream: upstreamLabel(rec.Upstream, rec.Model)}
	var res result.Result
	if json.Unmarshal(rec.Result, &res) == nil && res.Failure != nil {
		r.Failure = &RunFailure{Category: res.Failure.Category, Message: res.Failure.Message}
	} else if rec.ExitCode != 0 {
		r.Failure = &RunFailure{Category: result.InternalError, Message: fmt.Sprintf("exit %d without a failure in its result line", rec.ExitCode)}
	}
	if r.Failure != nil {
		r.failure = r.Failure.Category
	}
	r.AgentVersion, r.RecordedVersion = versionsOf(&res)
	out := filepath.Join(dir, rec.RunID)
	r.ResultJSON = filepath.Join(out, "result.json")
	if _, err := os.Stat(r.ResultJSON); err != nil {
		r.ResultJSON = filepath.Join(batch.RecordsDir(dir), rec.RunID+".json")
	}
	var cmp result.NextActionComparison
	found := readJSON(filepath.Join(out, "next-action-comparison.json"), &cmp)
	if found {
		m := cmp.Metrics
		r.NextAction = &NextAction{ToolNamesEqual: m.OrderedToolNamesEqual,
			ExactTool: m.OrderedToolNamesEqual && m.ToolCountEqual && m.ToolArgumentsEqual, TextSimilarity: m.TextSimilarity}
	}
	cmpp := &cmp
	if !found {
		cmpp = nil
	}
	readOutcomes(&r, out, rec.Result, cmpp)
	var calls []struct {
		Exact           bool  `json:"exact"`
		NormalizedExact *bool `json:"normalized_exact"`
	}
	if readJSON(filepath.Join(out, "observation-comparison.json"), &calls) {
		d := &Drift{Calls: len(calls)}
		for _, c := range calls {
			switch {
			case c.Exact:
				d.Exact++
			case c.NormalizedExact != nil && *c.NormalizedExact:
				d.NormalizedExact++
			default:
				d.Different++
			}
		}
		r.Observations = d
	}
	return r
}

func readJSON(path string, v any) bool {
	data, err := os.ReadFile(path)
	return err == nil && json.Unmarshal(data, v) == nil
}

func upstreamLabel(upstream, model string) string {
	if upstream == "" {
		upstream = "default"
	}
	if model != "" {
		return upstream + "/" + model
	}
	return upstream
}

// Write writes report.json, report.md and report.html into dir.
func Write(rep *Report, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := result.WriteJSON(filepath.Join(dir, "report.json"), rep); err != nil {
		return err
	}
	rep.linkBase = dir
	if err := result.WriteFile(filepath.Join(dir, "report.md"), Markdown(rep)); err != nil {
		return err
	}
	return result.WriteFile(filepath.Join(dir, "report.html"), HTML(rep))
}

// link is where the report in linkBase reaches a run's result: relative,
// so the study dir can move or be archived with its report.
func (rep *Report) link(r Run) string { return rep.rel(r.ResultJSON) }

// rel is target relative to the report's directory, when it can be.
func (rep *Report) rel(target string) string {
	if rep.linkBase != "" {
		base, err1 := filepath.Abs(rep.linkBase)
		abs, err2 := filepath.Abs(target)
		if err1 == nil && err2 == nil {
			if rel, err := filepath.Rel(base, abs); err == nil {
				target = rel
			}
		}
	}
	return filepath.ToSlash(target)
}
