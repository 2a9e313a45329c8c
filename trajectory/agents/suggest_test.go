package agents

import "testing"

func TestSuggest(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"claude", "claude-code"},
		{"Claude-Code", "claude-code"},
		{"claude_code", "claude-code"},
		{"codx", "codex"},
		{"opencod", "opencode"},
		{"mini", "mini-swe-agent"},
		{"mini_swe_agent", "mini-swe-agent"},
		{"swe-agnet", "swe-agent"},
		{"pi-agnt", "pi"}, // the alias, close enough, names its agent
		{"openhand", "openhands"},
		{"gemini", ""},
		{"x", ""},
		{"", ""},
	} {
		if got := Suggest(tc.in); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestClosest(t *testing.T) {
	flags := []string{"after-step", "max-steps", "agent", "agent-arg", "trajectory", "workspace", "prepare-only", "replay-only"}
	for _, tc := range []struct{ in, want string }{
		{"after_step", "after-step"},
		{"afterstep", "after-step"},
		{"after-setp", "after-step"},
		{"max_step", "max-steps"},
		{"trajectroy", "trajectory"},
		{"prepare", "prepare-only"},
		{"agnet", "agent"},
		{"replay", "replay-only"},
		{"verbose", ""},
		{"zzz", ""},
	} {
		if got := Closest(tc.in, flags); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Two equally close candidates suggest neither.
	if got := Closest("ab", []string{"ac", "ad"}); got != "" {
		t.Errorf("a tie suggested %q", got)
	}
}
