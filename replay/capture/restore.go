package capture

import (
	"crypto/sha256"
	"encoding/hex"
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

// RecoveryDir is where a restore moves what it would overwrite, under the
// agent's state directory.
const RecoveryDir = ".pvisor-recovery"

// RestoreOptions is one restore of a bundle into an agent's state directory.
type RestoreOptions struct {
	Bundle string // the bundle directory (Capture's result)
	Store  session.Store
	Root   string // the agent's state directory in the target home
	// Workspace is the session's new cwd; its realpath is what the CLI
	// will record and key the session by.
	Workspace string
	Limits    Limits
	Now       func() time.Time
}

// Restored is a bundle in place.
type Restored struct {
	Manifest *Manifest
	// Cwd is the realpath of the workspace the session now records.
	Cwd string
	// Main is the restored main file, absolute; Files every restored file.
	Main     string
	Files    []string
	Rewrites int
	// Backup holds what the restore replaced ("" when nothing was there).
	Backup string
}

// Restore checks the bundle (hashes, paths, limits), rewrites each file's
// recorded cwd to the workspace and writes it where the agent's CLI looks
// for it from there. Every file is staged first; then each is renamed into
// place, a file already there moved to <Root>/.pvisor-recovery/<time>/
// first, and on any failure the renamed files are taken back out and the
// moved ones put back.
func Restore(o RestoreOptions) (*Restored, error) {
	if o.Limits == (Limits{}) {
		o.Limits = DefaultLimits
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	m, err := Load(o.Bundle)
	if err != nil {
		return nil, err
	}
	if err := checkBundle(m, o); err != nil {
		return nil, err
	}
	cwd, err := filepath.EvalSymlinks(o.Workspace)
	if err != nil {
		return nil, fail(result.WorkspaceError, "workspace %s: %v", o.Workspace, err)
	}
	if cwd, err = filepath.Abs(cwd); err != nil {
		return nil, fail(result.WorkspaceError, "workspace: %v", err)
	}
	if err := os.MkdirAll(o.Root, 0o700); err != nil {
		return nil, fail(result.WorkspaceError, "agent state directory: %v", err)
	}
	stage, err := os.MkdirTemp(o.Root, ".pvisor-restore-")
	if err != nil {
		return nil, fail(result.WorkspaceError, "agent state directory: %v", err)
	}
	defer os.RemoveAll(stage)
	res := &Restored{Manifest: m, Cwd: cwd}
	var moves []move
	for i, f := range m.Files {
		dst := o.Store.Place(filepath.FromSlash(f.Path), cwd)
		if !filepath.IsLocal(dst) {
			return nil, fail(result.ConfigurationError, "bundle file %s would be restored to %s, outside %s", f.Path, dst, o.Root)
		}
		tmp := filepath.Join(stage, fmt.Sprintf("%d", i))
		from := m.OriginCwd
		if cr, ok := o.Store.(session.CwdRecorder); ok && !cr.RecordsCwd(filepath.FromSlash(f.Path)) {
			from = cwd // a copy of a user's file: byte for byte
		}
		n, err := rewriteFile(o.Store, filepath.Join(o.Bundle, FilesDir, filepath.FromSlash(f.Path)), tmp, from, cwd)
		if err != nil {
			return nil, err
		}
		res.Rewrites += n
		moves = append(moves, move{from: tmp, rel: dst})
		if f.Role == "main" {
			res.Main = filepath.Join(o.Root, dst)
		}
	}
	if res.Main == "" {
		return nil, fail(result.ConfigurationError, "bundle %s lists no main file", o.Bundle)
	}
	backup := filepath.Join(o.Root, RecoveryDir, o.Now().UTC().Format("20060102T150405.000000000Z"))
	if err := installFiles(moves, o.Root, backup); err != nil {
		return nil, err
	}
	for _, mv := range moves {
		res.Files = append(res.Files, filepath.Join(o.Root, mv.rel))
		if mv.replaced {
			res.Backup = backup
		}
	}
	return res, nil
}

// checkBundle applies the restore's own checks to a bundle Load accepted:
// the agent, the id and the limits.
func checkBundle(m *Manifest, o RestoreOptions) error {
	if m.Agent != o.Store.Agent() {
		return fail(result.ConfigurationError, "bundle %s holds a %s session, not %s", o.Bundle, m.Agent, o.Store.Agent())
	}
	if err := session.CheckID(m.SessionID); err != nil {
		return fail(result.ConfigurationError, "bundle %s: %v", o.Bundle, err)
	}
	if len(m.Files) > o.Limits.MaxFiles {
		return fail(result.ConfigurationError, "bundle %s lists %d files, more than the %d a restore takes", o.Bundle, len(m.Files), o.Limits.MaxFiles)
	}
	if m.OriginCwd == "" || !filepath.IsAbs(m.OriginCwd) {
		return fail(result.ConfigurationError, "bundle %s records no absolute origin cwd (%q)", o.Bundle, m.OriginCwd)
	}
	for _, f := range m.Files {
		if f.Size > o.Limits.MaxFileBytes {
			return fail(result.ConfigurationError, "bundle file %s is %d bytes, over the %d-byte limit", f.Path, f.Size, o.Limits.MaxFileBytes)
		}
	}
	return nil
}

// rewriteFile writes src to dst (new, 0600) with the cwd rewritten.
func rewriteFile(s session.Store, src, dst, from, to string) (int, error) {
	in, _, err := userfile.Open(src, userfile.Policy{What: "bundle file", Max: DefaultLimits.MaxFileBytes})
	if userfile.IsRefusal(err) {
		return 0, fail(result.ConfigurationError, "%v", err)
	} else if err != nil {
		return 0, fail(result.ConfigurationError, "bundle file %s: %v", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, fail(result.WorkspaceError, "%v", err)
	}
	n := 0
	if from == to {
		_, err = io.Copy(out, in)
	} else {
		n, err = s.Rewrite(out, in, from, to)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fail(result.TrajectoryError, "rewriting %s from %s to %s: %v", src, from, to, err)
	}
	return n, nil
}

// move is one staged file and where it goes.
type move struct {
	from, rel string
	replaced  bool // a file was at rel and went to the backup
	done      bool
}

// installFiles renames every staged file into root, moving what is there to
// backup first, and undoes all of it when one rename fails.
func installFiles(moves []move, root, backup string) (err error) {
	defer func() {
		if err == nil {
			return
		}
		for i := len(moves) - 1; i >= 0; i-- {
			mv := &moves[i]
			dst := filepath.Join(root, mv.rel)
			if mv.done {
				_ = os.Remove(dst)
			}
			if mv.replaced {
				_ = os.Rename(filepath.Join(backup, mv.rel), dst)
			}
		}
	}()
	for i := range moves {
		mv := &moves[i]
		dst := filepath.Join(root, mv.rel)
		if err := noSymlinksBelow(root, mv.rel); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return fail(result.WorkspaceError, "%v", err)
		}
		if fi, err := os.Lstat(dst); err == nil {
			if !fi.Mode().IsRegular() {
				return fail(result.WorkspaceError, "%s exists and is not a regular file: move it away", dst)
			}
			b := filepath.Join(backup, mv.rel)
			if err := os.MkdirAll(filepath.Dir(b), 0o700); err != nil {
				return fail(result.WorkspaceError, "backup: %v", err)
			}
			if err := os.Rename(dst, b); err != nil {
				return fail(result.WorkspaceError, "backup of %s: %v", dst, err)
			}
			mv.replaced = true
		}
		if err := os.Rename(mv.from, dst); err != nil {
			return fail(result.WorkspaceError, "%v", err)
		}
		mv.done = true
	}
	return nil
}

// noSymlinksBelow refuses a symlink at an existing directory component of
// rel below root: a restore writes only inside the state directory.
func noSymlinksBelow(root, rel string) error {
	p := root
	parts := strings.Split(rel, string(filepath.Separator))
	for _, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil // created below
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return fail(result.WorkspaceError, "refusing to restore through %s: it is a symlink", p)
		}
	}
	return nil
}

// Hash is the SHA-256 of each file a bundle lists, read again from disk,
// for checking that a bundle stayed byte-identical.
func Hash(dir string) (map[string]string, error) {
	m, err := Load(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	data, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	out[ManifestName] = sum(data)
	for _, f := range m.Files {
		out[f.Path] = f.SHA256 // Load checked it against the bytes
	}
	return out, nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
