// Package workspace makes fresh copies of a repository for a run: from a
// directory or a .tar/.tar.gz, keeping modification times (agents' tools sort
// by them), and never writing outside the destination however the archive
// is built.
package workspace

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Kind says how a workspace source is copied: "dir", "tar" or "tar.gz" (by
// name: .tar.gz/.tgz, .tar).
func Kind(src string) (string, error) {
	st, err := os.Stat(src)
	if err != nil {
		return "", fmt.Errorf("%v (give a directory or a .tar/.tar.gz of the repository)", err)
	}
	switch name := strings.ToLower(src); {
	case st.IsDir():
		return "dir", nil
	case strings.HasSuffix(name, ".tar.gz"), strings.HasSuffix(name, ".tgz"):
		return "tar.gz", nil
	case strings.HasSuffix(name, ".tar"):
		return "tar", nil
	}
	return "", fmt.Errorf("%s is neither a directory nor a .tar/.tar.gz/.tgz file", src)
}

// Fresh makes dst a private copy of src, so every run starts from the same
// files whatever earlier runs did to theirs.
func Fresh(src, dst string) error {
	kind, err := Kind(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if kind == "dir" {
		return copyTree(src, dst)
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if kind == "tar.gz" {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("%s: %v", src, err)
		}
		defer gz.Close()
		r = gz
	}
	if err := Untar(r, dst); err != nil {
		return fmt.Errorf("unpack %s: %v", src, err)
	}
	return nil
}

// Untar extracts regular files, directories and symlinks with their
// modification times (agents' tools sort by them: Claude Code's Glob lists
// the newest first). The archive is input, not trusted: an entry whose name
// leaves dst, or whose path goes through a symlink the archive made, is
// refused, so nothing is written outside dst.
func Untar(r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	var dirs []*tar.Header // their times are set last: filling a dir changes its mtime
	for {
		h, err := tr.Next()
		if err == io.EOF {
			for i := len(dirs) - 1; i >= 0; i-- {
				path := filepath.Join(dst, filepath.Clean(filepath.FromSlash(dirs[i].Name)))
				if err := os.Chtimes(path, dirs[i].AccessTime, dirs[i].ModTime); err != nil {
					return err
				}
			}
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if name == "." {
			continue
		}
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
			return fmt.Errorf("entry %q points outside the workspace", h.Name)
		}
		target := filepath.Join(dst, name)
		if err := noSymlinkBelow(dst, filepath.Dir(name)); err != nil {
			return fmt.Errorf("entry %q: %v", h.Name, err)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, mode|0o700); err != nil {
				return err
			}
			dirs = append(dirs, h)
		case tar.TypeReg:
			if err := writeFile(target, tr, mode); err != nil {
				return err
			}
			if err := os.Chtimes(target, h.AccessTime, h.ModTime); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
			mtime := unix.NsecToTimeval(h.ModTime.UnixNano())
			unix.Lutimes(target, []unix.Timeval{mtime, mtime})
		default:
			// Devices, fifos and hard links have no place in a repository snapshot.
			return fmt.Errorf("entry %q has unsupported type %q", h.Name, h.Typeflag)
		}
	}
}

// noSymlinkBelow fails when a component of rel (a clean relative directory)
// under dst is a symlink: writing through it could land anywhere.
func noSymlinkBelow(dst, rel string) error {
	if rel == "." {
		return nil
	}
	sub := ""
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		sub = filepath.Join(sub, c)
		st, err := os.Lstat(filepath.Join(dst, sub))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("goes through the symlink %s the archive made", sub)
		}
	}
	return nil
}

func writeFile(path string, r io.Reader, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// copyTree copies regular files, directories and symlinks (as links), with
// the modification times of files and directories.
func copyTree(src, dst string) error {
	type dirTime struct {
		path string
		t    time.Time
	}
	var dirs []dirTime
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || rel == "." {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, dirTime{target, info.ModTime()})
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := writeFile(target, f, info.Mode().Perm()); err != nil {
				return err
			}
			return os.Chtimes(target, info.ModTime(), info.ModTime())
		}
		return errors.New(path + ": not a regular file, directory or symlink")
	})
	for i := len(dirs) - 1; err == nil && i >= 0; i-- {
		err = os.Chtimes(dirs[i].path, dirs[i].t, dirs[i].t)
	}
	return err
}
