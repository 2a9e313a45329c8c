package run

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File is a whole regular file as read from disk.
type File struct {
	Path    string
	Content []byte
	Size    int64
	ModTime time.Time
	Mode    fs.FileMode
}

// checkAbs rejects relative paths: agents resolve them against their own
// working directory, which only the caller knows.
func checkAbs(op, path string) error {
	if path == "" || !filepath.IsAbs(path) {
		return newErr(op, path, NotAbsolute, nil)
	}
	return nil
}

// statRegular returns the FileInfo of path (following symlinks) or an error
// of Kind NotFound / IsDir / InvalidArgument (devices, fifos, sockets).
func statRegular(op, path string) (fs.FileInfo, error) {
	if err := checkAbs(op, path); err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fsErr(op, path, err)
	}
	if fi.IsDir() {
		return nil, newErr(op, path, IsDir, nil)
	}
	if !fi.Mode().IsRegular() {
		return nil, newErr(op, path, InvalidArgument, errors.New("not a regular file"))
	}
	return fi, nil
}

// ReadFile reads a whole regular file.
func ReadFile(path string) (File, error) {
	fi, err := statRegular("read", path)
	if err != nil {
		return File{}, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return File{}, fsErr("read", path, err)
	}
	return File{Path: path, Content: b, Size: int64(len(b)), ModTime: fi.ModTime(), Mode: fi.Mode()}, nil
}

// SplitLines splits content at every "\n" and keeps the "\r" of CRLF line
// ends. A final "\n" yields a final empty line, which is how Claude Code's
// and OpenCode's Read number a file ("a\n" is lines "a" and ""); drop it for
// cat -n numbering. Empty content is one empty line.
func SplitLines(content []byte) []string {
	return strings.Split(string(content), "\n")
}

// Window selects limit lines starting at the 1-based line offset (offset < 1
// means 1, limit <= 0 means all). It returns the number of the first line
// selected, which is offset even when the window is empty.
func Window(lines []string, offset, limit int) (first int, sel []string) {
	if offset < 1 {
		offset = 1
	}
	if offset > len(lines) {
		return offset, nil
	}
	end := len(lines)
	if limit > 0 && offset-1+limit < end {
		end = offset - 1 + limit
	}
	return offset, lines[offset-1 : end]
}

// LineWindow is part of a file, read without holding the rest in memory.
type LineWindow struct {
	Path       string
	First      int      // 1-based number of Lines[0] (the requested offset)
	Lines      []string // as SplitLines would return them
	TotalLines int      // lines in the whole file, counted as SplitLines does
	Size       int64
	ModTime    time.Time
}

// ReadLines streams a file and keeps only the lines Window(offset, limit)
// would select, counting the rest; for large logs an agent pages through.
func ReadLines(path string, offset, limit int) (LineWindow, error) {
	fi, err := statRegular("read", path)
	if err != nil {
		return LineWindow{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return LineWindow{}, fsErr("read", path, err)
	}
	defer f.Close()
	if offset < 1 {
		offset = 1
	}
	w := LineWindow{Path: path, First: offset, Size: fi.Size(), ModTime: fi.ModTime()}
	br := bufio.NewReaderSize(f, 64<<10)
	var cur []byte
	n := 0 // number of the line being read, 1-based
	for {
		chunk, err := br.ReadSlice('\n')
		keep := n+1 >= offset && (limit <= 0 || n+1 < offset+limit)
		if keep {
			cur = append(cur, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && err != io.EOF {
			return LineWindow{}, fsErr("read", path, err)
		}
		n++
		if keep {
			w.Lines = append(w.Lines, string(bytes.TrimSuffix(cur, []byte{'\n'})))
			cur = cur[:0]
		}
		if err == io.EOF {
			break
		}
	}
	w.TotalLines = n
	return w, nil
}

// WriteResult describes what Write replaced.
type WriteResult struct {
	Path    string
	Created bool   // the file did not exist (parents may have been created too)
	Old     []byte // previous content when overwritten
	Mode    fs.FileMode
}

// WriteFile replaces (or creates, with its parent directories) a file. An
// existing file keeps its permissions; a new one gets 0666 minus the umask,
// as the agents' Node/Rust runtimes create files.
func WriteFile(path string, content []byte) (WriteResult, error) {
	res := WriteResult{Path: path}
	if err := checkAbs("write", path); err != nil {
		return res, err
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return res, newErr("write", path, IsDir, nil)
	case err == nil && !fi.Mode().IsRegular():
		return res, newErr("write", path, InvalidArgument, errors.New("not a regular file"))
	case err == nil:
		if res.Old, err = os.ReadFile(path); err != nil {
			return res, fsErr("write", path, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		res.Created = true
		if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
			return res, fsErr("write", filepath.Dir(path), err)
		}
	default:
		return res, fsErr("write", path, err)
	}
	if err := os.WriteFile(path, content, 0o666); err != nil {
		return res, fsErr("write", path, err)
	}
	if fi, err := os.Stat(path); err == nil {
		res.Mode = fi.Mode()
	}
	return res, nil
}
