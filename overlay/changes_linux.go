package overlay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

const (
	xattrOpaque   = "trusted.overlay.opaque"
	xattrRedirect = "trusted.overlay.redirect"
	xattrMetacopy = "trusted.overlay.metacopy"
)

// Changes lists what the run changed, by reading the upper layer and
// comparing it with the lower stack (cfg.Path over cfg.Compose), i.e. with
// the view the run started from. Call it after Run returned.
//
// Overlayfs copies a file up when it is opened for writing even if nothing
// is written; such copies (same type, mode, owner, size, mtime and bytes)
// are not changes. Directories appear only when added, made opaque, or
// their mode or owner changed. Extended attributes are not compared.
func Changes(cfg Config, l Layout) ([]Change, error) {
	if InNamespace() {
		return nil, errors.New("overlayfs: Changes must run after the isolated run, not inside it")
	}
	var root, upperRoot unix.Stat_t
	if err := unix.Stat(cfg.Path, &root); err != nil {
		return nil, fmt.Errorf("overlayfs: %w", err)
	}
	if err := unix.Lstat(l.Upper, &upperRoot); err != nil {
		return nil, fmt.Errorf("overlayfs: upper layer: %w", err)
	}
	w := &walker{upper: l.Upper}
	if dirMetaDiffers(&upperRoot, &root) {
		w.add(".", Modified, &upperRoot)
	}
	if err := w.walk("", lowerDir(cfg.lowers()), false); err != nil {
		return nil, fmt.Errorf("overlayfs: list changes: %w", err)
	}
	sort.Slice(w.out, func(i, j int) bool { return w.out[i].Path < w.out[j].Path })
	return w.out, nil
}

type walker struct {
	upper string
	out   []Change
}

func (w *walker) add(rel string, kind ChangeKind, st *unix.Stat_t) {
	w.out = append(w.out, Change{Path: rel, Kind: kind, Type: fileType(st.Mode)})
}

// walk compares upper directory rel with lower, the directories that formed
// it in the original view. hidden means the upper directory (or one of its
// parents) is opaque, so lower entries missing from it are gone.
func (w *walker) walk(rel string, lower lowerDir, hidden bool) error {
	dir := filepath.Join(w.upper, rel)
	names, err := readNames(dir)
	if err != nil {
		return err
	}
	inUpper := make(map[string]bool, len(names))
	for _, name := range names {
		inUpper[name] = true
		crel := path.Join(rel, name)
		var st unix.Stat_t
		up := filepath.Join(dir, name)
		if err := unix.Lstat(up, &st); err != nil {
			return err
		}
		lpath, lst, err := lower.entry(name)
		if err != nil {
			return err
		}
		if isWhiteout(&st) {
			if lst != nil {
				w.add(crel, Deleted, lst)
			}
			continue
		}
		if err := checkXattrs(up); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if lst == nil {
				w.add(crel, Added, &st)
			} else if same, err := sameEntry(up, &st, lpath, lst); err != nil {
				return err
			} else if !same {
				w.add(crel, Modified, &st)
			}
			continue
		}
		opaque := getXattr(up, xattrOpaque) == "y"
		switch {
		case lst == nil:
			w.add(crel, Added, &st)
		case lst.Mode&unix.S_IFMT != unix.S_IFDIR:
			w.add(crel, Modified, &st)
		case opaque:
			w.add(crel, Opaque, &st)
		case dirMetaDiffers(&st, lst):
			w.add(crel, Modified, &st)
		}
		child, err := lower.child(name)
		if err != nil {
			return err
		}
		if err := w.walk(crel, child, hidden || opaque); err != nil {
			return err
		}
	}
	if !hidden {
		return nil
	}
	gone, err := lower.names()
	if err != nil {
		return err
	}
	for _, name := range gone {
		if inUpper[name] {
			continue
		}
		_, lst, err := lower.entry(name)
		if err != nil {
			return err
		}
		w.add(path.Join(rel, name), Deleted, lst)
	}
	return nil
}

// lowerDir is the stack of lower directories merged at one path, topmost
// first. Lower layers may themselves contain whiteouts and opaque
// directories (a compose layer can be an earlier run's upper layer).
type lowerDir []string

// entry is what the original view showed at name: the topmost lower entry,
// or nothing if a whiteout hides the rest.
func (d lowerDir) entry(name string) (string, *unix.Stat_t, error) {
	for _, dir := range d {
		p := filepath.Join(dir, name)
		var st unix.Stat_t
		err := unix.Lstat(p, &st)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		if isWhiteout(&st) {
			return "", nil, nil
		}
		return p, &st, nil
	}
	return "", nil, nil
}

// child is the stack merged at subdirectory name: directories from the
// topmost one down, until a non-directory, whiteout or opaque directory.
func (d lowerDir) child(name string) (lowerDir, error) {
	var out lowerDir
	for _, dir := range d {
		p := filepath.Join(dir, name)
		var st unix.Stat_t
		err := unix.Lstat(p, &st)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			break
		}
		out = append(out, p)
		if getXattr(p, xattrOpaque) == "y" {
			break
		}
	}
	return out, nil
}

// names lists the entries the original view showed in this directory.
func (d lowerDir) names() ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, dir := range d {
		names, err := readNames(dir)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if seen[name] {
				continue
			}
			seen[name] = true
			var st unix.Stat_t
			if err := unix.Lstat(filepath.Join(dir, name), &st); err != nil {
				return nil, err
			}
			if !isWhiteout(&st) {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// isWhiteout: overlayfs marks a deleted name with a 0/0 character device.
func isWhiteout(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

// checkXattrs rejects entries that forcedOff features would have written,
// e.g. in a layout made by a mount that did not switch them off.
func checkXattrs(p string) error {
	for _, name := range []string{xattrRedirect, xattrMetacopy} {
		if _, err := unix.Lgetxattr(p, name, nil); err == nil {
			return fmt.Errorf("%s has %s: this upper layer was written with redirect_dir or metacopy on, which cannot be applied as plain files; inspect it by hand", p, name)
		}
	}
	return nil
}

func getXattr(p, name string) string {
	buf := make([]byte, 16)
	n, err := unix.Lgetxattr(p, name, buf)
	if err != nil || n < 0 {
		return ""
	}
	return string(buf[:n])
}

func dirMetaDiffers(a, b *unix.Stat_t) bool {
	return a.Mode != b.Mode || a.Uid != b.Uid || a.Gid != b.Gid
}

// sameEntry reports whether a copied-up non-directory is unchanged.
func sameEntry(up string, ust *unix.Stat_t, low string, lst *unix.Stat_t) (bool, error) {
	if ust.Mode != lst.Mode || ust.Uid != lst.Uid || ust.Gid != lst.Gid {
		return false, nil
	}
	switch ust.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if ust.Size != lst.Size || ust.Mtim != lst.Mtim {
			return false, nil
		}
		return sameContent(up, low)
	case unix.S_IFLNK:
		a, err := os.Readlink(up)
		if err != nil {
			return false, err
		}
		b, err := os.Readlink(low)
		return a == b, err
	case unix.S_IFCHR, unix.S_IFBLK:
		return ust.Rdev == lst.Rdev, nil
	}
	return true, nil
}

func sameContent(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	ba := make([]byte, 64*1024)
	bb := make([]byte, 64*1024)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		switch {
		case ea == nil && eb == nil:
			continue
		case isShortRead(ea) && isShortRead(eb):
			return true, nil
		case ea != nil && !isShortRead(ea):
			return false, ea
		case eb != nil && !isShortRead(eb):
			return false, eb
		}
		return false, nil // one file ended earlier
	}
}

func isShortRead(err error) bool {
	return err == io.EOF || err == io.ErrUnexpectedEOF
}

func fileType(mode uint32) FileType {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return TypeDir
	case unix.S_IFLNK:
		return TypeSymlink
	case unix.S_IFIFO:
		return TypeFIFO
	case unix.S_IFCHR:
		return TypeChar
	case unix.S_IFBLK:
		return TypeBlock
	case unix.S_IFSOCK:
		return TypeSocket
	}
	return TypeFile
}
