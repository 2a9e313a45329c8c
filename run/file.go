package run

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pvisor/pvisor/run/userfile"
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

// MaxReadBytes caps what one whole-file read holds in memory, and
// MaxLineBytes one line kept by ReadLines: a replayed call must not take
// pvisor down (a 20 GB sparse file, a file that keeps growing).
var (
	MaxReadBytes int64 = 512 << 20
	MaxLineBytes       = 64 << 20
)

// openRegularHere opens path for reading only if it is a regular file. Devices
// are refused before they are opened (opening some has effects); the open
// does not block (a FIFO swapped in would hang it), and the type is checked
// again on the opened file.
func openRegularHere(op, path string) (*os.File, fs.FileInfo, error) {
	if err := checkAbs(op, path); err != nil {
		return nil, nil, err
	}
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() && !fi.Mode().IsRegular() {
		return nil, nil, notRegular(op, path, fi)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			return nil, nil, newErr(op, path, IsDir, nil)
		}
		return nil, nil, fsErr(op, path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fsErr(op, path, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, nil, newErr(op, path, IsDir, nil)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(op, path, fi)
	}
	return f, fi, nil
}

func notRegular(op, path string, fi fs.FileInfo) error {
	return newErr(op, path, NotRegular, fmt.Errorf("not a regular file (%s): file tools do not open devices, FIFOs or sockets under pvisor", fi.Mode().Type()))
}

// checkRegularHere returns an error of Kind NotRegular when path exists and is
// a device, FIFO or socket: opening it to write could hang or reach
// hardware. nil otherwise.
func checkRegularHere(op, path string) error {
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() && !fi.Mode().IsRegular() {
		return notRegular(op, path, fi)
	}
	return nil
}

// checkReadableHere is for callers that read with the agent's own semantics:
// it returns an error of Kind NotRegular or TooLarge when reading path
// would hang or exhaust pvisor, and nil otherwise (a missing file is the
// caller's to report as the agent does).
func checkReadableHere(op, path string) error {
	if err := CheckRegular(op, path); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxReadBytes {
		return tooLarge(op, path, fi.Size())
	}
	return nil
}

func tooLarge(op, path string, size int64) error {
	return newErr(op, path, TooLarge, fmt.Errorf("%d bytes is over pvisor's read cap of %d", size, MaxReadBytes))
}

// readRegularHere reads a whole regular file of at most MaxReadBytes.
func readRegularHere(op, path string) ([]byte, fs.FileInfo, error) {
	f, fi, err := OpenRegular(op, path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi.Size() > MaxReadBytes {
		return nil, nil, tooLarge(op, path, fi.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxReadBytes+1))
	if err != nil {
		return nil, nil, fsErr(op, path, err)
	}
	if int64(len(b)) > MaxReadBytes {
		return nil, nil, newErr(op, path, TooLarge, fmt.Errorf("grew past pvisor's read cap of %d bytes while read", MaxReadBytes))
	}
	return b, fi, nil
}

// readFileHere reads a whole regular file (at most MaxReadBytes).
func readFileHere(path string) (File, error) {
	b, fi, err := ReadRegular("read", path)
	if err != nil {
		return File{}, err
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

// readLinesHere streams a file and keeps only the lines Window(offset, limit)
// would select, counting the rest; for large logs an agent pages through.
func readLinesHere(path string, offset, limit int) (LineWindow, error) {
	f, fi, err := OpenRegular("read", path)
	if err != nil {
		return LineWindow{}, err
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
			if len(cur)+len(chunk) > MaxLineBytes {
				return LineWindow{}, newErr("read", path, TooLarge, fmt.Errorf("line %d is over pvisor's cap of %d bytes per line", n+1, MaxLineBytes))
			}
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

// writeFileHere replaces (or creates, with its parent directories) a file. An
// existing file keeps its permissions; a new one gets 0666 minus the umask,
// as the agents' Node/Rust runtimes create files.
func writeFileHere(path string, content []byte) (WriteResult, error) {
	res := WriteResult{Path: path}
	if err := checkAbs("write", path); err != nil {
		return res, err
	}
	if err := GuardWrite("open", path); err != nil {
		return res, fsErr("write", path, err)
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return res, newErr("write", path, IsDir, nil)
	case err == nil && !fi.Mode().IsRegular():
		return res, notRegular("write", path, fi)
	case err == nil:
		if res.Old, _, err = ReadRegular("write", path); err != nil {
			return res, err
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
	NoteWrite(path)
	if fi, err := os.Stat(path); err == nil {
		res.Mode = fi.Mode()
	}
	return res, nil
}

// ReadUserFile reads a small file a user named on the command line (a
// request, a prompt, a schema) with userfile's policy: a regular file — a
// FIFO would hang the read and /dev/zero never end — of at most max bytes,
// and not a symlink (a batch file from someone else's study could point a
// prompt at /etc/shadow, which would then be sent to the model). Errors
// start with flag and path; kind names the file ("a prompt file") and hint
// says what to pass instead.
func ReadUserFile(flag, path string, max int64, kind, hint string) ([]byte, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", flag, err)
	}
	data, err := userfile.ReadAll(abs, userfile.Policy{What: kind, Max: max})
	var refused *userfile.Error
	if errors.As(err, &refused) && strings.Contains(refused.Reason, "; pass ") {
		return nil, fmt.Errorf("%s %s: %v", flag, path, err) // it says what to pass
	} else if err != nil {
		return nil, fmt.Errorf("%s %s: %v; %s", flag, path, err, hint)
	}
	return data, nil
}

// copyRegularFileHere copies the regular file src to a new file dst (mode 0600,
// never replacing one): src is never followed through a symlink, so a
// database or session a user names is copied, not whatever a link in its
// place points at.
func copyRegularFileHere(src, dst string) error {
	// Never waits for a FIFO's writer; refuses it, devices and symlinks.
	in, _, err := userfile.Open(src, userfile.Policy{})
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
