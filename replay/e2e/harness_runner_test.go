//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
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
