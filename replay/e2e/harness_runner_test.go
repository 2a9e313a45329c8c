//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// checkTamperRefused: a Python runner's continuation whose first request
// is not the projection of the rebuilt trajectory (the tests edit the
// staged file under the runner) ends with exit 40, a failure naming the
// differing message, and nothing forwarded upstream.
func checkTamperRefused(t *testing.T, stdout []byte, err error) {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 40 {
		t.Fatalf("exit %v, want 40\n%s", err, stdout)
	}
	lines := bytes.Split(bytes.TrimSpace(stdout), []byte("\n"))
	var res struct {
		Failure struct {
			Message string `json:"message"`
		} `json:"failure"`
		Metadata struct {
			Continuation struct {
				Bridge struct {
					Forwarded int `json:"forwarded"`
				} `json:"bridge"`
			} `json:"continuation"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(lines[len(lines)-1], &res); err != nil || res.Metadata.Continuation.Bridge.Forwarded != 0 ||
		!strings.Contains(res.Failure.Message, "differs from message") {
		t.Fatalf("result %s (%v)", lines[len(lines)-1], err)
	}
}

// checkRunnerContinued: a Python runner's continuation (its stdout and its
// work dir) ended continued and completed, its requests went through the
// envelope (one at least ending at the boundary) with none refused, and its
// next action equals the recorded one. It returns the result line for the
// agent's own checks.
func checkRunnerContinued(t *testing.T, work string, stdout []byte) []byte {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(stdout), []byte("\n"))
	line := lines[len(lines)-1]
	var res struct {
		Phase       string         `json:"phase"`
		AgentStatus string         `json:"agent_status"`
		Continued   int            `json:"continued_steps"`
		Failure     map[string]any `json:"failure"`
		Metadata    struct {
			Continuation struct {
				Envelope struct {
					Accepted     int `json:"accepted"`
					BoundaryEnds int `json:"boundary_requests"`
				} `json:"envelope"`
				Bridge struct {
					Refused int `json:"refused"`
				} `json:"bridge"`
			} `json:"continuation"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(line, &res); err != nil {
		t.Fatalf("result line %q: %v", line, err)
	}
	c := res.Metadata.Continuation
	if res.Phase != "continued" || res.AgentStatus != "completed" || res.Continued < 1 || res.Failure != nil ||
		c.Envelope.Accepted < 1 || c.Envelope.BoundaryEnds < 1 || c.Bridge.Refused != 0 {
		t.Fatalf("result %s", line)
	}
	var cmp struct {
		Metrics struct {
			Names bool `json:"ordered_tool_names_equal"`
			Args  bool `json:"tool_arguments_equal"`
		} `json:"metrics"`
	}
	b, err := os.ReadFile(filepath.Join(work, "out", "r", "next-action-comparison.json"))
	if err != nil || json.Unmarshal(b, &cmp) != nil || !cmp.Metrics.Names || !cmp.Metrics.Args {
		t.Errorf("next action differs from the recorded one (%v):\n%s", err, b)
	}
	return line
}
