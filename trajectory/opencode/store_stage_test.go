package opencode

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory/opencode/store"
)

// The project the real import resolved for the recording's repository
// (trajectory/opencode/store/testdata: session.project_id of both fixtures).
const recordedProject = "85ef450d3b82211bc7c13716712b8e84caeec6f2"

func TestPlace(t *testing.T) {
	repo := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", "../../testdata/e2e/sessions/opencode@1.18.33/repo.tar.gz", "-C", repo).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	repo, _ = filepath.EvalSymlinks(repo)
	sub := filepath.Join(repo, "greeter")
	plain, _ := filepath.EvalSymlinks(t.TempDir())
	got, err := place(repo)
	if err != nil || got != (store.Place{ProjectID: recordedProject, Worktree: repo, Directory: repo}) {
		t.Errorf("repository: %+v, %v", got, err)
	}
	if got, err := place(sub); err != nil || got != (store.Place{ProjectID: recordedProject, Worktree: repo, Directory: sub}) {
		t.Errorf("subdirectory: %+v, %v", got, err)
	}
	if got, err := place(plain); err != nil || got != (store.Place{ProjectID: "global", Worktree: "/", Directory: plain}) {
		t.Errorf("outside git: %+v, %v", got, err)
	}
	// The id OpenCode cached in the git directory wins over the root commit.
	if err := os.WriteFile(filepath.Join(repo, ".git", "opencode"), []byte("cached-id\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := place(repo); got.ProjectID != "cached-id" {
		t.Errorf("cached id: %+v", got)
	}
	if out, err := exec.Command("git", "-C", repo, "remote", "add", "origin", "https://example.com/a/b.git").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := place(repo); err != errRemoteProject {
		t.Errorf("with an origin remote: %v, want errRemoteProject", err)
	}
}

// TestTemplateAndStage: the template is made once per binary by
// the CLI (a stand-in that leaves the database the real CLI made, with
// its session) and holds only the schema; staging writes the session into
// a copy for the workspace's project, and pvisor reads back the CLI's
// export document.
func TestTemplateAndStage(t *testing.T) {
	fixture, _ := filepath.Abs("store/testdata/1.18.33/import.db.gz")
	dir := t.TempDir()
	count := filepath.Join(dir, "runs")
	cli := filepath.Join(dir, "opencode")
	script := "#!/bin/sh\necho run >> " + count + "\n[ \"$*\" = \"session list --format json\" ] || exit 3\n" +
		"mkdir -p \"$XDG_DATA_HOME/opencode\" && gzip -dc " + fixture + " > \"$XDG_DATA_HOME/opencode/opencode.db\"\n"
	if err := os.WriteFile(cli, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	env := []string{"PATH=" + os.Getenv("PATH")}
	tpl, err := template(state, cli, env)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := template(state, cli, env); err != nil || again != tpl {
		t.Fatalf("second call: %s, %v", again, err)
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "run") != 1 {
		t.Errorf("the CLI ran %d times, want once", strings.Count(string(b), "run"))
	}
	db, err := store.OpenReadOnly(tpl)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Find("ses_dd667972effeIl1TDXAj2ZWXpJ"); ok {
		t.Errorf("the template kept the CLI's session")
	}
	db.Close()

	doc, err := os.ReadFile("../../testdata/e2e/sessions/opencode@1.18.33/export.json")
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(dir, "home")
	if err := stageDB(state, cli, env, home, ws, doc); err != nil {
		t.Fatal(err)
	}
	out, err := readDB(filepath.Join(home, ".local", "share", "opencode"), "ses_dd667972effeIl1TDXAj2ZWXpJ")
	if err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetManyBytes(out, "info.projectID", "info.directory", "info.path", "messages.#"); got[0].Str != "global" ||
		got[1].Str != ws || got[2].Str != strings.TrimPrefix(ws, "/") || got[3].Int() != 7 {
		t.Errorf("read back: %v", got)
	}
	// A home with a database already is not overwritten: the caller imports.
	if err := stageDB(state, cli, env, home, ws, doc); err == nil {
		t.Errorf("staging over an existing database succeeded")
	}
}
