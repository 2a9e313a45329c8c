package result

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// WriteJSON writes v pretty-printed to path atomically: a reader sees the old
// file or the complete new one, never a torn one, even after a crash.
func WriteJSON(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return WriteFile(path, buf.Bytes())
}

// WriteFile writes data to path atomically with mode 0600: temp file in the
// same directory, fsync, rename, fsync of the directory.
func WriteFile(path string, data []byte) error {
	a, err := CreateAtomic(path)
	if err != nil {
		return err
	}
	if _, err := a.Write(data); err != nil {
		a.Abort()
		return err
	}
	return a.Commit()
}

// AtomicFile is WriteFile for data that is streamed rather than held in
// memory: written to a mode-0600 temp file beside its path, it replaces
// the path on Commit and never exists there half-written.
type AtomicFile struct {
	f         *os.File
	path, tmp string
	done      bool
}

// CreateAtomic starts an AtomicFile for path. Every call must end with
// Commit or Abort; Abort after Commit does nothing, so it can be deferred.
func CreateAtomic(path string) (*AtomicFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	a := &AtomicFile{f: f, path: path, tmp: f.Name()}
	if err := f.Chmod(0o600); err != nil {
		a.Abort()
		return nil, err
	}
	return a, nil
}

func (a *AtomicFile) Write(p []byte) (int, error) { return a.f.Write(p) }

// Commit syncs the data, renames it onto the path and syncs the directory.
func (a *AtomicFile) Commit() error {
	if a.done {
		return fmt.Errorf("%s: already committed or aborted", a.path)
	}
	if err := a.f.Sync(); err != nil {
		a.Abort()
		return err
	}
	if err := a.f.Close(); err != nil {
		a.Abort()
		return err
	}
	if err := os.Rename(a.tmp, a.path); err != nil {
		a.Abort()
		return err
	}
	a.done = true
	return syncDir(filepath.Dir(a.path))
}

// Abort removes the temp file; the path keeps what it held before.
func (a *AtomicFile) Abort() {
	if a.done {
		return
	}
	a.done = true
	a.f.Close()
	os.Remove(a.tmp)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Line encodes r as the single JSON line printed on stdout.
func (r *Result) Line() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		// Every field is a plain value; this cannot fail short of memory
		// exhaustion, and then a minimal line is still better than none.
		return []byte(`{"schema_version":"` + SchemaVersion + `","failure":{"category":"internal_error","message":"result encoding failed"}}` + "\n")
	}
	return buf.Bytes()
}
