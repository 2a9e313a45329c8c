// Package userfile is the one way pvisor opens a file that a user, a
// configuration or a trajectory names: a session to capture, a bundle's
// files and manifest, a batch glob's matches, a prompt file. Such a path
// is untrusted. Open never blocks (a FIFO without a writer is refused, not
// waited on), accepts only a regular file, states its symlink policy and
// caps the size; the caps are the README's "Limits" table.
package userfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Policy says what Open accepts.
type Policy struct {
	// What names the file in errors ("prompt file", "bundle manifest").
	What string
	// Max is the largest size accepted, in bytes; 0 means no cap.
	Max int64
	// FollowSymlinks accepts a symlink as the last component. Without it a
	// symlink is refused (O_NOFOLLOW); directories above are followed.
	FollowSymlinks bool
}

// Error is a refusal: the file exists but is not one pvisor reads.
type Error struct {
	What, Path, Reason string
}

func (e *Error) Error() string {
	what := e.What
	if what == "" {
		what = "file"
	}
	return fmt.Sprintf("refusing %s %s: %s", what, e.Path, e.Reason)
}

// IsRefusal reports whether err is a refusal by Open (as opposed to, say,
// a file that does not exist).
func IsRefusal(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// Open opens path for reading under p. The returned file is a regular
// file no larger than p.Max when it was opened; readers must still bound
// what they read (it may grow): use Reader or ReadAll.
func Open(path string, p Policy) (*os.File, fs.FileInfo, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	if !p.FollowSymlinks {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		if !p.FollowSymlinks && errors.Is(err, syscall.ELOOP) {
			return nil, nil, &Error{p.What, path, "it is a symlink; pass the file it points to"}
		}
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, &Error{p.What, path, "not a regular file (" + kind(st.Mode()) + ")"}
	}
	if p.Max > 0 && st.Size() > p.Max {
		f.Close()
		return nil, nil, &Error{p.What, path, fmt.Sprintf("%d bytes, over the %d-byte limit", st.Size(), p.Max)}
	}
	return f, st, nil
}

// Reader is f bounded by p.Max: reading past the cap fails with a refusal
// instead of returning more (a file that grew after Open).
func Reader(f *os.File, p Policy) io.Reader {
	if p.Max <= 0 {
		return f
	}
	return &capped{r: f, left: p.Max, err: &Error{p.What, f.Name(), fmt.Sprintf("grew past the %d-byte limit while it was read", p.Max)}}
}

type capped struct {
	r    io.Reader
	left int64
	err  error
}

func (c *capped) Read(b []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells a file that ends exactly at the cap from one
		// that goes on.
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			return 0, c.err
		}
		return 0, err
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.r.Read(b)
	c.left -= int64(n)
	return n, err
}

// ReadAll opens path under p and reads all of it.
func ReadAll(path string, p Policy) ([]byte, error) {
	f, _, err := Open(path, p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(Reader(f, p))
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return m.Type().String()
}
