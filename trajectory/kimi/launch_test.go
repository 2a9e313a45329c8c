package kimi

import (
	"regexp"
	"strings"
	"testing"
)

// The directory names Kimi 2.1.0 gave workspaces (the recorded session's,
// and one with capitals, a space and punctuation), and the slug's rule at
// its edges.
func TestWorkspaceID(t *testing.T) {
	for _, c := range []struct{ cwd, want string }{
		{"/tmp/pvisor-e2e/kimi/repo", "wd_repo_8908fbdd6ff1"},
		{"/tmp/kimi-s/probe/My Repo.X_y", "wd_my-repo.x_y_be95dcbb6047"},
		{"/tmp/kimi-s/probe/My Repo.X_y/", "wd_my-repo.x_y_be95dcbb6047"},
	} {
		if got := WorkspaceID(c.cwd); got != c.want {
			t.Errorf("WorkspaceID(%q) = %s, want %s", c.cwd, got, c.want)
		}
	}
	for _, c := range []struct{ name, want string }{
		{"--Ab  C--", "ab-c"},
		{"Réplica", "r-plica"},
		{"..", "workspace"},
		{"***", "workspace"},
		{"", "workspace"},
		{strings.Repeat("a", 39) + "-b" + strings.Repeat("c", 10), strings.Repeat("a", 39)},
	} {
		if got := workspaceSlug(c.name); got != c.want {
			t.Errorf("workspaceSlug(%q) = %q, want %q", c.name, got, c.want)
		}
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
	if a != b || !sessionIDRe().MatchString(a) {
		t.Errorf("derived ids %s %s", a, b)
	}
	if !regexp.MustCompile(`^session_[0-9a-f]{8}-[0-9a-f]{4}-4`).MatchString(a) {
		t.Errorf("derived id %s is not a v4-shaped uuid", a)
	}
}

func TestVersionShape(t *testing.T) {
	if !versionShape().MatchString("2.1.0\n") || versionShape().MatchString("kimi version two") {
		t.Error("version shape")
	}
}
