package opencode

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/trajectory/opencode/store/storetest"
	sessions "github.com/pvisor/pvisor/trajectory/session"
)

// Database finds a session by key with what show prints, and marks a
// database of another schema as session.ErrOtherSchema (the engine then
// looks for the id's bytes and has the CLI export).
func TestDatabase(t *testing.T) {
	const id = "ses_dd667972effeIl1TDXAj2ZWXpJ"
	data := t.TempDir()
	storetest.DB(t, "1.18.33", filepath.Join(data, DatabaseFiles[0]))
	db, err := Database().Open(data)
	if err != nil {
		t.Fatal(err)
	}
	s, ok, err := db.Find(id)
	if err != nil || !ok || s.ID != id || s.Directory != "/tmp/ocfix/1.18.33/ws" || s.Version != "1.18.33" || s.Messages != 7 || s.Parts != 27 || s.Updated == 0 {
		t.Errorf("Find = %+v, %v, %v", s, ok, err)
	}
	if _, ok, err := db.Find("ses_other"); ok || err != nil {
		t.Errorf("Find of another id = %v, %v", ok, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	raw, err := sql.Open("sqlite", filepath.Join(data, DatabaseFiles[0]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("ALTER TABLE session ADD COLUMN color text"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if _, err := Database().Open(data); !errors.Is(err, sessions.ErrOtherSchema) {
		t.Errorf("another schema: %v, want ErrOtherSchema", err)
	}
	if _, err := Database().Open(t.TempDir()); err == nil || errors.Is(err, sessions.ErrOtherSchema) {
		t.Errorf("no database: %v", err)
	}
}
