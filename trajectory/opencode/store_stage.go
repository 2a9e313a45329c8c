package opencode

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pvisor/pvisor/replay/launch"
	toolrun "github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory/opencode/store"
)

// OpenCode's `import` and `export` are each a Bun start-up of seconds for
// a few rows of SQLite. pvisor writes and reads those rows itself
// (trajectory/opencode/store) in a copy of a template database that the
// real CLI created: the schema is always the binary's own. A template is
// made once per binary (keyed like the version cache: resolved path,
// device, inode, size, times) by `opencode session list`, the cheapest
// command that opens the database, and kept under the state root.
const templateDir = "opencode-templates"

// template returns the template database for the CLI entry,
// making it when the state root has none for this binary.
func template(stateRoot, entry string, env []string) (string, error) {
	key := launch.BinaryKey(entry)
	if key == "" {
		return "", fmt.Errorf("cannot identify the opencode binary %s to key its template database", entry)
	}
	sum := sha256.Sum256([]byte(key))
	dir := filepath.Join(stateRoot, templateDir)
	path := filepath.Join(dir, hex.EncodeToString(sum[:12])+".db")
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(dir, "make-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	home := filepath.Join(work, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", err
	}
	if _, _, err := runTool(entry, append(append([]string(nil), env...), cliEnv(home, "")...), home, "session", "list", "--format", "json"); err != nil {
		return "", fmt.Errorf("making the template database: %w", err)
	}
	made := filepath.Join(home, ".local", "share", "opencode", "opencode.db")
	db, err := store.Open(made)
	if err != nil {
		return "", err
	}
	err = db.Clear()
	tmp := filepath.Join(work, "template.db")
	if err == nil {
		err = db.VacuumInto(tmp)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	// Parallel runs may make one each: each renames a whole file.
	return path, os.Rename(tmp, path)
}

// place is the project `opencode import` resolves when run in dir
// (OpenCode 1.18): outside a git repository the global project at the
// filesystem root; in one, the id cached in the git directory's
// "opencode" file, else the first of the sorted root commits of HEAD, with
// the top level as worktree. A repository with an origin remote is
// refused: OpenCode derives that id from a hash of the remote URL, which
// pvisor does not reproduce, so the caller imports with the CLI.
func place(dir string) (store.Place, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return store.Place{}, err
	}
	global := store.Place{ProjectID: "global", Worktree: "/", Directory: real}
	found := false
	for d := real; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			found = true
			break
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	if !found {
		return global, nil
	}
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = real
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
		out, err := cmd.Output()
		return strings.TrimRight(string(out), "\r\n"), err
	}
	top, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		return store.Place{}, fmt.Errorf("git rev-parse --show-toplevel in %s: %v", real, err)
	}
	common, err := git("rev-parse", "--git-common-dir")
	if err != nil {
		return store.Place{}, fmt.Errorf("git rev-parse --git-common-dir in %s: %v", real, err)
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(real, common)
	}
	if remote, _ := git("remote", "get-url", "origin"); strings.TrimSpace(remote) != "" {
		return store.Place{}, errRemoteProject
	}
	at := store.Place{Worktree: filepath.Clean(top), Directory: real}
	if b, err := os.ReadFile(filepath.Join(common, "opencode")); err == nil && strings.TrimSpace(string(b)) != "" {
		at.ProjectID = strings.TrimSpace(string(b))
		return at, nil
	}
	roots, err := git("rev-list", "--max-parents=0", "HEAD")
	var ids []string
	for _, l := range strings.Split(roots, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ids = append(ids, l)
		}
	}
	if err != nil || len(ids) == 0 {
		at.ProjectID = "global"
		return at, nil
	}
	sort.Strings(ids)
	at.ProjectID = ids[0]
	return at, nil
}

var errRemoteProject = errors.New("the workspace's git repository has an origin remote: OpenCode derives its project id from the remote URL, which pvisor does not reproduce")

// stageDB writes the export doc into a fresh database in the data
// directory of home, as `opencode import` run in dir would, from the
// template of entry. It reports how: {"method":"direct"} or, when the
// direct write cannot stand in for the CLI (another schema, a project id
// it cannot derive), an error the caller answers by importing with the
// CLI, recording the reason.
func stageDB(stateRoot, entry string, env []string, home, dir string, doc []byte) error {
	if stateRoot == "" || entry == "" {
		return fmt.Errorf("no state root or opencode entrypoint for a template database")
	}
	where, err := place(dir)
	if err != nil {
		return err
	}
	tpl, err := template(stateRoot, entry, env)
	if err != nil {
		return err
	}
	data := filepath.Join(home, ".local", "share", "opencode")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	dst := filepath.Join(data, "opencode.db")
	if err := toolrun.CopyRegularFile(tpl, dst); err != nil {
		return err
	}
	db, err := store.Open(dst)
	if err != nil {
		os.Remove(dst)
		return err
	}
	_, err = db.Write(doc, where, time.Now().UnixMilli())
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}

// readDB prints session id of the database in dataDir as `opencode
// export` does.
func readDB(dataDir, id string) ([]byte, error) {
	db, err := store.OpenReadOnly(filepath.Join(dataDir, "opencode.db"))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	doc, ok, err := db.Export(id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("session %s is not in the opencode database %s", id, dataDir)
	}
	return doc, nil
}

// tooLarge: a session over the capture limit is refused, not
// handed to the CLI's export instead.
func tooLarge(err error) bool { return store.IsTooLarge(err) }
