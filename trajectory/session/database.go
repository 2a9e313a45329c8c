package session

import "errors"

// Database is an agent CLI's session store when it is a database rather
// than files (OpenCode's SQLite), in the data directory its agent's
// resumable Store names as Root. Sessions are found in it by key and moved
// as export documents, the resumable Store's files, which the CLI imports
// and exports; the database itself is only ever read here.
type Database interface {
	// Files are the database's file names in the data directory: the
	// database first, then its journal files. They are copied and hashed
	// together (a fork shows the parent's unchanged).
	Files() []string
	// Open opens the database in dataDir to read, without writing there
	// (from a snapshot when the database has a write-ahead log). An error
	// for which errors.Is(err, ErrOtherSchema) holds, here or from Find,
	// is a database of a schema this build does not read: the caller may
	// look for the id's bytes in Files instead and have the CLI's export
	// confirm it.
	Open(dataDir string) (DBReader, error)
}

// DBReader is an open Database.
type DBReader interface {
	// Find looks session id up by its key, never by its bytes (another
	// session may quote them); ok is false when there is no such session.
	Find(id string) (s DBSession, ok bool, err error)
	// Close closes the database and removes its snapshot.
	Close() error
}

// DBSession is what a Database records about one session.
type DBSession struct {
	ID        string
	Directory string // the cwd it ran in
	Version   string // the CLI's version that wrote it
	Title     string
	Messages  int
	Parts     int
	Updated   int64 // Unix milliseconds
}

// ErrOtherSchema marks a Database error for a schema pvisor does not read.
var ErrOtherSchema = errors.New("a database schema pvisor does not read")

// OtherSchema marks err as ErrOtherSchema, keeping its message.
func OtherSchema(err error) error { return otherSchema{err} }

type otherSchema struct{ err error }

func (e otherSchema) Error() string        { return e.err.Error() }
func (e otherSchema) Unwrap() error        { return e.err }
func (e otherSchema) Is(target error) bool { return target == ErrOtherSchema }
