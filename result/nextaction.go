package result

import (
	"bytes"
	"encoding/json"
	"strings"
)

// NextActionSchema is next-action-comparison.json's schema.
const NextActionSchema = "sandbox-playback.next-action-comparison/v2"

// Action is the comparable signature of one model response.
type Action struct {
	Text      string       `json:"text"`
	Reasoning string       `json:"reasoning"`
	Tools     []ActionTool `json:"tools"`
}

// ActionTool is one tool call of an action.
type ActionTool struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// NextActionComparison compares the recorded action after the boundary with
// the one the continued agent took. It is a measurement, never a gate.
type NextActionComparison struct {
	SchemaVersion              string            `json:"schema_version"`
	Original                   Action            `json:"original"`
	Replayed                   Action            `json:"replayed"`
	Metrics                    NextActionMetrics `json:"metrics"`
	Gating                     bool              `json:"gating"`
	InputCondition             string            `json:"input_condition"`
	BoundaryUserPromptInjected bool              `json:"boundary_user_prompt_injected"`
}

// NextActionMetrics are the per-field results.
type NextActionMetrics struct {
	OriginalTextPresent       bool     `json:"original_text_present"`
	ReplayedTextPresent       bool     `json:"replayed_text_present"`
	TextComparisonStatus      string   `json:"text_comparison_status"`
	TextExact                 *bool    `json:"text_exact"`
	TextSimilarity            *float64 `json:"text_similarity"`
	OriginalReasoningPresent  bool     `json:"original_reasoning_present"`
	ReplayedReasoningPresent  bool     `json:"replayed_reasoning_present"`
	ReasoningComparisonStatus string   `json:"reasoning_comparison_status"`
	ReasoningExact            *bool    `json:"reasoning_exact"`
	ReasoningSimilarity       *float64 `json:"reasoning_similarity"`
	ToolCountEqual            bool     `json:"tool_count_equal"`
	OrderedToolNamesEqual     bool     `json:"ordered_tool_names_equal"`
	ToolArgumentsEqual        bool     `json:"tool_arguments_equal"`
}

// CompareNextAction fills the metrics: similarity on whitespace-collapsed
// text, exactness on the raw text, and tools by count, ordered names and
// JSON-equal arguments.
func CompareNextAction(original, replayed Action, promptInjected bool) NextActionComparison {
	c := NextActionComparison{SchemaVersion: NextActionSchema, Original: original, Replayed: replayed,
		InputCondition: "replayed_boundary_only", BoundaryUserPromptInjected: promptInjected}
	if promptInjected {
		c.InputCondition = "boundary_user_prompt_appended"
	}
	m := &c.Metrics
	m.OriginalTextPresent, m.ReplayedTextPresent, m.TextComparisonStatus, m.TextExact, m.TextSimilarity = compareText(original.Text, replayed.Text)
	m.OriginalReasoningPresent, m.ReplayedReasoningPresent, m.ReasoningComparisonStatus, m.ReasoningExact, m.ReasoningSimilarity = compareText(original.Reasoning, replayed.Reasoning)
	m.ToolCountEqual = len(original.Tools) == len(replayed.Tools)
	m.OrderedToolNamesEqual, m.ToolArgumentsEqual = m.ToolCountEqual, m.ToolCountEqual
	for i := 0; m.ToolCountEqual && i < len(original.Tools); i++ {
		if original.Tools[i].Name != replayed.Tools[i].Name {
			m.OrderedToolNamesEqual = false
		}
		if !jsonEqual(original.Tools[i].Arguments, replayed.Tools[i].Arguments) {
			m.ToolArgumentsEqual = false
		}
	}
	return c
}

func compareText(a, b string) (aPresent, bPresent bool, status string, exact *bool, sim *float64) {
	na, nb := collapse(a), collapse(b)
	aPresent, bPresent = na != "", nb != ""
	f := false
	zero := 0.0
	switch {
	case !aPresent && !bPresent:
		return aPresent, bPresent, "not_applicable_both_empty", nil, nil
	case !aPresent:
		return aPresent, bPresent, "original_empty", &f, &zero
	case !bPresent:
		return aPresent, bPresent, "replayed_empty", &f, &zero
	}
	e := a == b
	s := Similarity(na, nb)
	return aPresent, bPresent, "comparable", &e, &s
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

func jsonEqual(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	ea, _ := json.Marshal(va)
	eb, _ := json.Marshal(vb)
	return bytes.Equal(ea, eb)
}
