// Package store reads and writes OpenCode's SQLite database (opencode.db)
// the way its CLI does, so a continuation needs no `opencode import` or
// `opencode export` process (each is a Bun start-up of seconds).
//
// The schema is never ours: a database is always a copy of one the real CLI
// created (a template per binary, see replay), and Check refuses one whose
// session, message or part columns are not the ones this package was
// written against (OpenCode 1.18), so the caller falls back to the CLI.
//
// The rows follow the 1.18 CLI: `import` decodes the export's session info
// into a row (session.go), inserts each message with its data minus id and
// sessionID, and each part with its data minus id, sessionID and messageID;
// `export` prints the row back as the session info and the messages
// ordered by creation time and id, each with its parts ordered by id.
package store

import (
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pvisor/pvisor/run"

	_ "modernc.org/sqlite" // pure Go: the binary stays static
)

// Tables this package writes and reads, with every column OpenCode 1.18
// gives them, in table order.
var Tables = map[string][]string{
	"session": {"id", "project_id", "workspace_id", "parent_id", "slug", "directory", "path", "title", "version",
		"share_url", "summary_additions", "summary_deletions", "summary_files", "summary_diffs", "metadata", "cost",
		"tokens_input", "tokens_output", "tokens_reasoning", "tokens_cache_read", "tokens_cache_write", "revert",
		"permission", "agent", "model", "time_created", "time_updated", "time_compacting", "time_archived"},
	"message": {"id", "session_id", "time_created", "time_updated", "data"},
	"part":    {"id", "message_id", "session_id", "time_created", "time_updated", "data"},
}

// SchemaError is a database whose tables are not the ones this package
// knows: another OpenCode generation. The caller uses the CLI instead.
type SchemaError struct {
	Table     string
	Got, Want []string
}

func (e *SchemaError) Error() string {
	if e.Got == nil {
		return fmt.Sprintf("opencode database has no %s table: not the schema pvisor writes directly (OpenCode 1.18)", e.Table)
	}
	return fmt.Sprintf("opencode database table %s has columns %v, pvisor writes %v (OpenCode 1.18): another schema", e.Table, e.Got, e.Want)
}

// DB is an open opencode.db.
type DB struct{ db *sql.DB }

// Open opens the database at path for writing (a copy pvisor owns).
func Open(path string) (*DB, error) { return open(path, "") }

// OpenReadOnly opens a database pvisor must not change. SQLite still
// needs its shared-memory file for a database in WAL mode, so callers
// open a copy when the directory is not theirs.
func OpenReadOnly(path string) (*DB, error) { return open(path, "mode=ro") }

func open(path, mode string) (*DB, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?_pragma=busy_timeout(5000)"
	if mode != "" {
		dsn += "&" + mode
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	d := &DB{db: db}
	if err := d.Check(); err != nil {
		db.Close()
		return nil, err
	}
	return d, nil
}

func (d *DB) Close() error { return d.db.Close() }

// Check compares the tables this package uses with Tables.
func (d *DB) Check() error {
	for _, t := range []string{"session", "message", "part"} {
		rows, err := d.db.Query(`SELECT name FROM pragma_table_info(?) ORDER BY cid`, t)
		if err != nil {
			return fmt.Errorf("reading the opencode database: %w", err)
		}
		var cols []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return err
			}
			cols = append(cols, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if !slices.Equal(cols, Tables[t]) {
			return &SchemaError{Table: t, Got: cols, Want: Tables[t]}
		}
	}
	return nil
}

// Session is what locate and show print about a stored session.
type Session struct {
	ID, Directory, Title, Version string
	Messages, Parts               int
	TimeUpdated                   int64
}

// Find looks session id up by its primary key; ok is false when there is
// no such session.
func (d *DB) Find(id string) (s Session, ok bool, err error) {
	err = d.db.QueryRow(`SELECT id, directory, title, version, time_updated,
		(SELECT count(*) FROM message WHERE session_id = session.id),
		(SELECT count(*) FROM part WHERE session_id = session.id)
		FROM session WHERE id = ?`, id).Scan(&s.ID, &s.Directory, &s.Title, &s.Version, &s.TimeUpdated, &s.Messages, &s.Parts)
	if err == sql.ErrNoRows {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, fmt.Errorf("reading session %s from the opencode database: %w", id, err)
	}
	return s, true, nil
}

// Clear deletes every row of the tables a CLI run fills on its own
// (projects and their directories, written by OpenCode's start-up in the
// directory it runs in), leaving the schema and its migration records: a
// template then holds nothing of the command that made it.
func (d *DB) Clear() error {
	for _, t := range []string{"part", "message", "session", "project_directory", "project"} {
		if _, err := d.db.Exec(`DELETE FROM "` + strings.ReplaceAll(t, `"`, ``) + `"`); err != nil {
			return fmt.Errorf("clearing %s in the template database: %w", t, err)
		}
	}
	return nil
}

// VacuumInto writes a compact copy of the database, WAL content included,
// to path (which must not exist).
func (d *DB) VacuumInto(path string) error {
	_, err := d.db.Exec(`VACUUM INTO ?`, path)
	return err
}

// OpenSnapshot opens the database in dataDir (a home that is not
// pvisor's) without writing there: SQLite writes the shared-memory file of
// a database in WAL mode even to read it, so a database with a
// write-ahead log is read from a copy of both files in a new directory
// under tmpParent (removed by done); one without is opened immutable.
func OpenSnapshot(dataDir, tmpParent string) (db *DB, done func(), err error) {
	main := filepath.Join(dataDir, "opencode.db")
	if st, err := os.Lstat(main); err != nil {
		return nil, nil, fmt.Errorf("no opencode database at %s", main)
	} else if st.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink(main)
		return nil, nil, fmt.Errorf("refusing opencode database %s: it is a symlink (to %s); pvisor reads only a home's own database, pass the home that holds it", main, target)
	} else if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("refusing opencode database %s: not a regular file (%s); opencode keeps its sessions in a regular SQLite file", main, st.Mode().Type())
	}
	if st, err := os.Lstat(main + "-wal"); err != nil || st.Size() == 0 {
		db, err := open(main, "mode=ro&immutable=1")
		return db, func() {}, err
	}
	dir, err := os.MkdirTemp(tmpParent, "opencode-db-")
	if err != nil {
		return nil, nil, err
	}
	done = func() { os.RemoveAll(dir) }
	for _, suffix := range []string{"", "-wal"} {
		if err := run.CopyRegularFile(main+suffix, filepath.Join(dir, "opencode.db"+suffix)); err != nil {
			done()
			return nil, nil, err
		}
	}
	if db, err = Open(filepath.Join(dir, "opencode.db")); err != nil {
		done()
		return nil, nil, err
	}
	return db, done, nil
}
