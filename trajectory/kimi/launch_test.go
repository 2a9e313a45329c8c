package kimi

import (
	"regexp"
	"testing"
)

// The directory name Kimi gave the recorded session's workspace.
func TestWorkspaceID(t *testing.T) {
	if got := WorkspaceID("/tmp/pvisor-e2e/kimi/repo"); got != "wd_repo_8908fbdd6ff1" {
		t.Errorf("WorkspaceID = %s", got)
	}
}

// A log in its session directory keeps the session's id; one elsewhere
// gets a stable id of Kimi's shape.
func TestSessionID(t *testing.T) {
	const sid = "session_a2fe30d1-7088-4049-ac2d-3f3bfbe296e4"
	if got := sessionID("/h/.kimi-code/sessions/wd_r_0/"+sid+"/agents/main/wire.jsonl", nil); got != sid {
		t.Errorf("in place: %s", got)
	}
	a, b := sessionID("/x/wire.jsonl", []byte("log")), sessionID("/y/wire.jsonl", []byte("log"))
	if a != b || !sessionIDRe.MatchString(a) {
		t.Errorf("derived ids %s %s", a, b)
	}
	if !regexp.MustCompile(`^session_[0-9a-f]{8}-[0-9a-f]{4}-4`).MatchString(a) {
		t.Errorf("derived id %s is not a v4-shaped uuid", a)
	}
}

func TestVersionShape(t *testing.T) {
	if !versionShape.MatchString("2.1.0\n") || versionShape.MatchString("kimi version two") {
		t.Error("version shape")
	}
}
