// Package capture copies an agent's native session, found by id, into a
// portable bundle: the original bytes, unmodified, and a manifest with the
// recorded cwd (which a restore rewrites from) and a SHA-256 per file. It
// is agent-neutral; where a session lives and what it records come from
// the agent's session.Store.
package capture

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/run/userfile"
	"github.com/pvisor/pvisor/trajectory/session"
)

// Schema is the manifest's schema_version.
const Schema = "pvisor.capture/v1"

// ManifestName and FilesDir name a bundle's parts.
const (
	ManifestName = "manifest.json"
	FilesDir     = "files"
)

// Limits bound what one capture copies.
type Limits struct {
	MaxFileBytes int64
	MaxFiles     int
}

// DefaultLimits are Outpost's: a session larger than this is not a
// conversation any CLI would resume.
var DefaultLimits = Limits{MaxFileBytes: 64 << 20, MaxFiles: 4096}

// Manifest describes a bundle.
type Manifest struct {
	SchemaVersion string `json:"schema_version"`
	Agent         string `json:"agent"`
	SessionID     string `json:"session_id"`
	OriginCwd     string `json:"origin_cwd"`
	CLIVersion    string `json:"cli_version,omitempty"`
	// Via is set when the files are not the agent's own but were made
	// from its store by its CLI (OpenCode keeps sessions in SQLite).
	Via       *Via      `json:"via,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	Files     []File    `json:"files"`
}

// Via says how a bundle's files were made: Method "export" is the CLI
// Tool, at Version, exporting the session from a copy of its database.
type Via struct {
	Method  string `json:"method"`
	Tool    string `json:"tool"`
	Version string `json:"version"`
}

// File is one captured file; Path is relative to the agent's state
// directory (so Codex's date directories and Claude's project key stay)
// and to the bundle's files/ directory.
type File struct {
	Path   string `json:"path"`
	Role   string `json:"role"` // main, or the store's name for the other files (Located.SidecarRole)
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Error carries the failure category (result.*) that picks the exit code.
type Error struct {
	Category string
	Err      error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func fail(category string, format string, args ...any) error {
	return &Error{Category: category, Err: fmt.Errorf(format, args...)}
}

// Category is err's failure category: a session that is missing or
// ambiguous is a trajectory error, a bad id a configuration error.
func Category(err error) string {
	var ce *Error
	var bad *session.BadIDError
	switch {
	case errors.As(err, &ce):
		return ce.Category
	case errors.As(err, &bad):
		return result.ConfigurationError
	case session.IsNotFound(err):
		return result.TrajectoryError
	}
	return result.InternalError
}

// Options is one capture.
type Options struct {
	Store    session.Store
	Root     string // the agent's state directory (Store.Root)
	ID       string
	StoreDir string // the bundle store
	Via      *Via   // recorded in the manifest
	Limits   Limits
	Now      func() time.Time
}

// Capture locates session o.ID and writes its bundle to
// <StoreDir>/<agent>/<id>/, replacing an earlier capture of the same
// session only once the new one is complete. It returns the bundle's
// directory and manifest.
func Capture(o Options) (string, *Manifest, error) {
	if err := session.CheckID(o.ID); err != nil {
		return "", nil, err
	}
	if o.Limits == (Limits{}) {
		o.Limits = DefaultLimits
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	loc, err := o.Store.Locate(o.Root, o.ID)
	if err != nil {
		return "", nil, err
	}
	if n := 1 + len(loc.Sidecars); n > o.Limits.MaxFiles {
		return "", nil, fail(result.TrajectoryError, "%s session %s has %d files, more than the %d a capture holds", loc.Agent, o.ID, n, o.Limits.MaxFiles)
	}
	if err := OpenStore(o.StoreDir); err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp(o.StoreDir, ".capture-")
	if err != nil {
		return "", nil, fail(result.WorkspaceError, "capture store %s: %v", o.StoreDir, err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed into place
	m := &Manifest{SchemaVersion: Schema, Agent: loc.Agent, SessionID: o.ID, Via: o.Via, CreatedAt: o.Now().UTC(), Files: []File{}}
	for i, rel := range append([]string{loc.Main}, loc.Sidecars...) {
		role := loc.SidecarRole
		if role == "" {
			role = "sidecar"
		}
		if i == 0 {
			role = "main"
		}
		f, err := copyFile(loc.Root, rel, filepath.Join(tmp, FilesDir), o.Limits.MaxFileBytes)
		if err != nil {
			return "", nil, err
		}
		f.Role = role
		m.Files = append(m.Files, f)
	}
	main, err := os.Open(filepath.Join(tmp, FilesDir, loc.Main))
	if err != nil {
		return "", nil, err
	}
	origin, err := o.Store.Origin(main)
	main.Close()
	if err != nil {
		return "", nil, fail(result.TrajectoryError, "%s: %v", filepath.Join(loc.Root, loc.Main), err)
	}
	if origin.Cwd == "" {
		return "", nil, fail(result.TrajectoryError, "%s records no cwd: is it a %s session?", filepath.Join(loc.Root, loc.Main), loc.Agent)
	}
	m.OriginCwd, m.CLIVersion = origin.Cwd, origin.CLIVersion
	if err := writeManifest(tmp, m); err != nil {
		return "", nil, err
	}
	dest := filepath.Join(o.StoreDir, loc.Agent, o.ID)
	if err := install(tmp, dest); err != nil {
		return "", nil, err
	}
	return dest, m, nil
}

// copyFile copies root/rel to dst/rel, refusing symlinks anywhere below
// root, anything but a regular file, files over max, and a file that
// changed while it was read.
func copyFile(root, rel, dst string, max int64) (File, error) {
	if !filepath.IsLocal(rel) {
		return File{}, fail(result.TrajectoryError, "refusing %q: not a path inside %s", rel, root)
	}
	if err := noSymlinks(root, rel); err != nil {
		return File{}, err
	}
	src := filepath.Join(root, rel)
	// Never blocks: a FIFO (a session dir anyone can write to may hold one)
	// is refused at once, as are devices, sockets and files over max.
	in, before, err := userfile.Open(src, userfile.Policy{What: "session file", Max: max})
	if err != nil {
		return File{}, fail(result.TrajectoryError, "%v (a capture copies only regular files of at most %d bytes)", err, max)
	}
	defer in.Close()
	out := filepath.Join(dst, rel)
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return File{}, err
	}
	w, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return File{}, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(in, max+1))
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return File{}, fail(result.WorkspaceError, "copying %s: %v", src, err)
	}
	after, err := in.Stat()
	if err != nil {
		return File{}, err
	}
	if n != before.Size() || after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		return File{}, fail(result.TrajectoryError, "%s changed while it was captured (%d bytes, then %d): capture again once the agent has stopped", src, before.Size(), after.Size())
	}
	return File{Path: filepath.ToSlash(rel), Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// noSymlinks refuses a symlink at any component of rel below root (the
// root itself may be one, as ~/.claude often is).
func noSymlinks(root, rel string) error {
	p := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			return fail(result.TrajectoryError, "%v", err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return fail(result.TrajectoryError, "refusing %s: it is a symlink, and a capture copies only the session's own files", p)
		}
	}
	return nil
}

func writeManifest(dir string, m *Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, ManifestName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// install renames the finished bundle tmp to dest. An earlier bundle at
// dest is moved aside first and removed only after the rename, so a crash
// leaves either bundle whole; what is at dest must be a bundle.
func install(tmp, dest string) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return fail(result.WorkspaceError, "capture store: %v", err)
	}
	var old string
	if _, err := os.Lstat(dest); err == nil {
		if _, err := os.Stat(filepath.Join(dest, ManifestName)); err != nil {
			return fail(result.ConfigurationError, "%s exists and is not a capture bundle (no %s): move it away", dest, ManifestName)
		}
		old = dest + ".old-" + filepath.Base(tmp)
		if err := os.Rename(dest, old); err != nil {
			return fail(result.WorkspaceError, "%v", err)
		}
	}
	if err := os.Rename(tmp, dest); err != nil {
		if old != "" {
			_ = os.Rename(old, dest)
		}
		return fail(result.WorkspaceError, "%v", err)
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}
