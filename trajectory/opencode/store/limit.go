package store

import (
	"errors"
	"fmt"
)

// MaxExportBytes caps the rows one export reads: the capture limit of a
// session file (64 MiB), which the exported document must meet anyway.
// The sizes are asked of SQLite first (octet_length reads no content), so
// a database with one 300 MB part row is refused without loading it
// (issue 24 #2: 2.17 GB and an out-of-memory crash).
const MaxExportBytes = 64 << 20

// maxExport is the cap in force (tests lower it).
var maxExport int64 = MaxExportBytes

// checkSize refuses a session whose message and part rows hold more than
// maxExport bytes, naming its largest part.
func (d *DB) checkSize(id string) error {
	var msgs, parts int64
	if err := d.db.QueryRow(`SELECT COALESCE(SUM(octet_length(data)), 0) FROM message WHERE session_id = ?`, id).Scan(&msgs); err != nil {
		return fmt.Errorf("sizing the messages of %s: %w", id, err)
	}
	if err := d.db.QueryRow(`SELECT COALESCE(SUM(octet_length(data)), 0) FROM part WHERE session_id = ?`, id).Scan(&parts); err != nil {
		return fmt.Errorf("sizing the parts of %s: %w", id, err)
	}
	if msgs+parts <= maxExport {
		return nil
	}
	var big string
	var bigN int64
	_ = d.db.QueryRow(`SELECT id, octet_length(data) FROM part WHERE session_id = ? ORDER BY octet_length(data) DESC LIMIT 1`, id).Scan(&big, &bigN)
	return &TooLargeError{fmt.Sprintf("session %s holds %d bytes of messages and parts (the largest, part %s, %d bytes), over the %d-byte limit of a capture; it is not read",
		id, msgs+parts, big, bigN, maxExport)}
}

// TooLargeError is a session over MaxExportBytes. It is final: the CLI's
// own export is not tried instead (it would load the rows whole too).
type TooLargeError struct{ msg string }

func (e *TooLargeError) Error() string { return e.msg }

// IsTooLarge reports whether err is a TooLargeError.
func IsTooLarge(err error) bool {
	var e *TooLargeError
	return errors.As(err, &e)
}
