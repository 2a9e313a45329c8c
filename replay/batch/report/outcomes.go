package report

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/result"
)

// Outcomes: whether a continuation passed its verify command, what it
// changed, what it cost, and model against model at one boundary.

// Verify is a run's metadata.verify.
type Verify struct {
	ExitCode   *int    `json:"exit_code"`
	Seconds    float64 `json:"seconds"`
	OutputTail string  `json:"output_tail"`
	Verdict    string  `json:"verdict"`
	TimedOut   bool    `json:"timed_out,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// Tokens are what the model service reported for a run's answers, summed.
type Tokens struct {
	Input       int64 `json:"input_tokens"`
	CachedInput int64 `json:"cached_input_tokens"`
	Output      int64 `json:"output_tokens"`
	Responses   int   `json:"responses"`
}

// RunDiff is a run's workspace diff: where it is and how large.
type RunDiff struct {
	Path  string         `json:"path"`
	Stats map[string]any `json:"stats,omitempty"`
	text  string         // the start of the diff, for the HTML page
}

// Agreement is a run's metadata.action_agreement: how many actions after
// the boundary followed the recording (see outcome.ActionAgreement).
type Agreement struct {
	RecordedActions  int        `json:"recorded_actions"`
	ContinuedActions int        `json:"continued_actions"`
	Compared         int        `json:"compared"`
	ToolsPrefix      int        `json:"tools_prefix"`
	ExactPrefix      int        `json:"exact_prefix"`
	FirstDivergence  *int       `json:"first_divergence"`
	RecordedTools    [][]string `json:"recorded_tools"`
	ContinuedTools   [][]string `json:"continued_tools"`
}

// Actions are the recorded and the continued next action, side by side.
type Actions struct {
	Recorded  result.Action `json:"recorded"`
	Continued result.Action `json:"continued"`
}

// Limits on what the report copies out of a run's files: the page stays a
// page however large the diffs and texts are.
const (
	maxDiffExcerpt = 16 << 10
	maxActionText  = 2000 // runes of text, of reasoning and of each tool's arguments
)

// readOutcomes fills what a run's result line and output dir say about
// its outcome.
func readOutcomes(r *Run, out string, line []byte, cmp *result.NextActionComparison) {
	var res struct {
		Metadata struct {
			Verify        *Verify    `json:"verify"`
			Agreement     *Agreement `json:"action_agreement"`
			WorkspaceDiff *struct {
				Written bool           `json:"written"`
				Stats   map[string]any `json:"stats"`
			} `json:"workspace_diff"`
			Continuation struct {
				Bridge struct {
					Usage *Tokens `json:"usage"`
				} `json:"bridge"`
			} `json:"continuation"`
		} `json:"metadata"`
	}
	if json.Unmarshal(line, &res) != nil {
		return
	}
	m := res.Metadata
	r.Verify, r.Agreement = m.Verify, m.Agreement
	if m.Verify != nil {
		m.Verify.OutputTail = clip(m.Verify.OutputTail, 4<<10)
	}
	if t := m.Continuation.Bridge.Usage; t != nil && t.Responses > 0 {
		r.Tokens = t
		if p := r.Prices; p != nil {
			c := math.Round(p.Cost(t.Input, t.CachedInput, t.Output)*1e6) / 1e6
			r.Cost = &c
		}
	}
	if d := m.WorkspaceDiff; d != nil && d.Written {
		path := filepath.Join(out, "workspace.diff")
		r.Diff = &RunDiff{Path: path, Stats: d.Stats, text: readHead(path, maxDiffExcerpt)}
	}
	if cmp != nil {
		r.Actions = &Actions{Recorded: clipAction(cmp.Original), Continued: clipAction(cmp.Replayed)}
	}
}

func readHead(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, n+1))
	if int64(len(data)) > n {
		return clip(string(data[:n]), int(n)) + "\n[… the rest is in workspace.diff]\n"
	}
	return string(data)
}

// clip cuts s to at most n runes, saying so.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func clipAction(a result.Action) result.Action {
	out := result.Action{Text: clip(a.Text, maxActionText), Reasoning: clip(a.Reasoning, maxActionText)}
	for i, t := range a.Tools {
		if i == 20 {
			out.Tools = append(out.Tools, result.ActionTool{Name: "…", Arguments: json.RawMessage(`"more tools not shown"`)})
			break
		}
		args := t.Arguments
		if len(args) > maxActionText {
			q, _ := json.Marshal(clip(string(args), maxActionText))
			args = q
		}
		out.Tools = append(out.Tools, result.ActionTool{Name: clip(t.Name, 200), Arguments: args})
	}
	return out
}

// outcomesOf adds a group's verify and token figures.
func outcomesOf(g *Group, runs []Run) {
	pass := 0
	var tok Tokens
	var cost float64
	costed := 0
	var prefixes []float64
	for _, r := range runs {
		if a := r.Agreement; a != nil {
			prefixes = append(prefixes, float64(a.ToolsPrefix))
		}
		if v := r.Verify; v != nil {
			g.Verified++
			if g.Verdicts == nil {
				g.Verdicts = map[string]int{}
			}
			g.Verdicts[v.Verdict]++
			if v.Verdict == "pass" {
				pass++
			}
		}
		if t := r.Tokens; t != nil {
			g.WithTokens++
			tok.Input += t.Input
			tok.CachedInput += t.CachedInput
			tok.Output += t.Output
			tok.Responses += t.Responses
		}
		if r.Cost != nil {
			costed++
			cost += *r.Cost
		}
	}
	if g.Verified > 0 {
		g.VerifyPass, g.VerifyPassCI = ratio(pass, g.Verified), wilson(pass, g.Verified)
	}
	if g.WithTokens > 0 {
		g.Tokens = &tok
	}
	if len(prefixes) > 0 {
		d := distribution(prefixes)
		g.AgreeingActions = &d
	}
	// A cost only when every run with tokens has one: a partial sum would
	// read as the group's cost.
	if costed > 0 && costed == g.WithTokens {
		c := math.Round(cost*1e6) / 1e6
		g.Cost = &c
	}
}

// Comparison sets two groups at the same agent and boundary side by side:
// two models, or two CLI releases.
type Comparison struct {
	Agent     string `json:"agent"`
	AfterStep int    `json:"after_step"`
	A         string `json:"a"` // upstream (the model) · CLI release
	B         string `json:"b"`
	// VerifyPass and ExactNextAction are share(A) − share(B), each with a
	// 95% interval; nil when either side has no run to count.
	VerifyPass      *Difference `json:"verify_pass"`
	ExactNextAction *Difference `json:"exact_next_action"`
}

// Difference is share A − share B with Newcombe's hybrid score interval.
type Difference struct {
	AK, AN int      `json:"-"`
	BK, BN int      `json:"-"`
	A      Share    `json:"a"`
	B      Share    `json:"b"`
	Diff   float64  `json:"difference"`
	CI     Interval `json:"ci"`
}

// Share is k of n.
type Share struct {
	K     int     `json:"k"`
	N     int     `json:"n"`
	Share float64 `json:"share"`
}

// compare lists every pair of groups that share agent and boundary, in
// group order.
func compare(groups []Group) []Comparison {
	var out []Comparison
	for i := range groups {
		for j := i + 1; j < len(groups); j++ {
			a, b := groups[i], groups[j]
			if a.Agent != b.Agent || a.AfterStep != b.AfterStep {
				continue
			}
			c := Comparison{Agent: a.Agent, AfterStep: a.AfterStep, A: groupLabel(a), B: groupLabel(b)}
			if a.Verified > 0 && b.Verified > 0 {
				c.VerifyPass = newcombe(a.Verdicts["pass"], a.Verified, b.Verdicts["pass"], b.Verified)
			}
			if a.Compared > 0 && b.Compared > 0 {
				c.ExactNextAction = newcombe(a.ExactToolMatches, a.Compared, b.ExactToolMatches, b.Compared)
			}
			if c.VerifyPass != nil || c.ExactNextAction != nil {
				out = append(out, c)
			}
		}
	}
	return out
}

func groupLabel(g Group) string {
	return g.Upstream + " · " + orDash(g.AgentVersion)
}

// newcombe is the difference of two independent shares, k1/n1 − k2/n2,
// with Newcombe's (1998, method 10) hybrid score interval built from the
// two Wilson intervals: it stays inside [−1, 1] and is sensible at 0 and
// n, where the textbook normal interval collapses.
func newcombe(k1, n1, k2, n2 int) *Difference {
	p1, p2 := float64(k1)/float64(n1), float64(k2)/float64(n2)
	l1, u1 := wilsonBounds(k1, n1)
	l2, u2 := wilsonBounds(k2, n2)
	d := p1 - p2
	lo := d - math.Sqrt((p1-l1)*(p1-l1)+(u2-p2)*(u2-p2))
	hi := d + math.Sqrt((u1-p1)*(u1-p1)+(p2-l2)*(p2-l2))
	return &Difference{AK: k1, AN: n1, BK: k2, BN: n2,
		A: Share{k1, n1, round4(p1)}, B: Share{k2, n2, round4(p2)},
		Diff: round4(d), CI: Interval{Low: round4(math.Max(-1, lo)), High: round4(math.Min(1, hi))}}
}
