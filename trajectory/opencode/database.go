package opencode

import (
	"errors"

	"github.com/pvisor/pvisor/trajectory/opencode/store"
	sessions "github.com/pvisor/pvisor/trajectory/session"
)

// Database is OpenCode's SQLite database as capture, resume and `pvisor
// session locate|show` look sessions up in it: by the session table's key,
// from a snapshot, read only (trajectory/opencode/store).
func Database() sessions.Database { return database{} }

type database struct{}

func (database) Files() []string { return DatabaseFiles }

func (database) Open(dataDir string) (sessions.DBReader, error) {
	db, done, err := store.OpenSnapshot(dataDir, "")
	if err != nil {
		return nil, schemaErr(err)
	}
	return reader{db, done}, nil
}

type reader struct {
	db   *store.DB
	done func()
}

func (r reader) Find(id string) (sessions.DBSession, bool, error) {
	s, ok, err := r.db.Find(id)
	if err != nil {
		return sessions.DBSession{}, false, schemaErr(err)
	}
	return sessions.DBSession{ID: s.ID, Directory: s.Directory, Version: s.Version, Title: s.Title,
		Messages: s.Messages, Parts: s.Parts, Updated: s.TimeUpdated}, ok, nil
}

func (r reader) Close() error {
	err := r.db.Close()
	r.done()
	return err
}

// schemaErr marks the store's schema errors as session.ErrOtherSchema.
func schemaErr(err error) error {
	var schema *store.SchemaError
	if errors.As(err, &schema) {
		return sessions.OtherSchema(err)
	}
	return err
}
