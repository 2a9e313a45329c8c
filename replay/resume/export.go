package resume

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/replay/capture"
	"github.com/pvisor/pvisor/result"
	toolrun "github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory/agents"
	"github.com/pvisor/pvisor/trajectory/session"
)

// An agent whose CLI keeps its sessions in a database (launch.Agent's
// Database) is captured, resumed and forked through export documents: the
// session is found by key in the database, exported (Resume.Export) from a
// copy of it into the agent's resumable store, restored from there, and
// exported again after the run (Resume.Collect).

// locateInDatabase finds session id in the session table of a CLI's data
// directory by its primary key, without writing there (nothing may be
// written before the run has its directories; session.Database.Open). A
// database of a schema pvisor does not read falls back to finding the id's
// bytes in the files, which the export then confirms (it must return that
// id). The main file is the database; the others are sidecars, hashed with
// it to show the parent unchanged.
func locateInDatabase(agent, root, id string) (*session.Located, error) {
	if err := session.CheckID(id); err != nil {
		return nil, err
	}
	a, _ := agents.Get(agent)
	if a.Database == nil {
		return nil, fail(result.InternalError, "%s keeps no sessions in a database", agent)
	}
	files := a.Database.Files()
	loc := &session.Located{Agent: agent, ID: id, Root: root}
	for _, name := range files {
		if _, err := os.Lstat(filepath.Join(root, name)); err != nil {
			continue
		}
		if loc.Main == "" {
			loc.Main = name
		} else {
			loc.Sidecars = append(loc.Sidecars, name)
		}
	}
	notFound := &session.NotFoundError{Agent: agent, ID: id, Root: root, Pattern: "session with that id in " + files[0]}
	if loc.Main != files[0] {
		return nil, notFound
	}
	found, err := findSession(a.Database, root, id)
	if errors.Is(err, session.ErrOtherSchema) {
		found, err = false, nil
		for _, name := range append([]string{loc.Main}, loc.Sidecars...) {
			ok, ferr := fileContains(filepath.Join(root, name), []byte(id))
			if ferr != nil {
				return nil, ferr
			}
			found = found || ok
		}
	}
	if err != nil {
		return nil, fail(result.TrajectoryError, "%s: %v; is it the database of %s as its tested releases write it?", filepath.Join(root, loc.Main), err, agent)
	}
	if !found {
		return nil, notFound
	}
	return loc, nil
}

// findSession looks id up in the database of dataDir.
func findSession(d session.Database, dataDir, id string) (bool, error) {
	db, err := d.Open(dataDir)
	if err != nil {
		return false, err
	}
	defer db.Close()
	_, ok, err := db.Find(id)
	return ok, err
}

// fileContains streams path for needle.
func fileContains(path string, needle []byte) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	var window []byte // the tail of the last read, then this one
	for {
		n, err := f.Read(chunk)
		window = append(window, chunk[:n]...)
		if bytes.Contains(window, needle) {
			return true, nil
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		// Keep what could start the needle across the next read.
		if keep := len(needle) - 1; len(window) > keep {
			window = append(window[:0], window[len(window)-keep:]...)
		}
	}
}

// exportSource copies the source database into the state dir and exports
// the session from the copy: the CLI writes to a database it opens, and
// the source home is not the run's to write.
func (r *sessionRun) exportSource(src *source, entry, ws string) (string, error) {
	via := &capture.Via{Method: "export", Tool: r.launcher().Binary(), Version: deref(r.res.Agent.Version)}
	c := resumeCall{Entry: entry, Env: r.baseEnv(), Cwd: ws}
	bundle, _, err := exportBundle(r.store, r.spec, src.located, c, filepath.Join(r.stateDir, "source-home"), filepath.Join(r.stateDir, "source"), via)
	return bundle, err
}

// exportBundle copies the database files of loc into the data directory
// of the new home work, exports the session from the copy with the CLI
// (c.Entry) and captures the export into the bundle store storeDir.
func exportBundle(store session.Store, spec resumeSpec, loc *session.Located, c resumeCall, work, storeDir string, via *capture.Via) (string, *capture.Manifest, error) {
	data, err := store.Root(work, os.Getenv)
	if err != nil {
		return "", nil, fail(result.InternalError, "%v", err)
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return "", nil, fail(result.WorkspaceError, "%v", err)
	}
	for _, rel := range append([]string{loc.Main}, loc.Sidecars...) {
		if err := toolrun.CopyRegularFile(filepath.Join(loc.Root, rel), filepath.Join(data, rel)); err != nil {
			return "", nil, fail(result.WorkspaceError, "copying the source database: %v", err)
		}
	}
	read, err := spec.Export(c, data, loc.ID)
	if err != nil {
		return "", nil, fail(result.TrajectoryError, "exporting %s session %s: %v", store.Agent(), loc.ID, err)
	}
	if read && via != nil {
		// pvisor read the rows itself: the export document is the one the
		// CLI would print, made without running it.
		v := *via
		v.Method = "database-read"
		via = &v
	}
	return capture.Capture(capture.Options{Store: store, Root: data, ID: loc.ID, StoreDir: storeDir, Via: via})
}
