package run

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// Kind classifies an operation failure so that each agent formatter can turn
// it into that agent's own error text without parsing Go error strings.
type Kind int

const (
	KindOther        Kind = iota // anything not listed below; see Error.Err
	NotFound                     // the path (or a working directory) does not exist
	IsDir                        // a file was expected, the path is a directory
	NotDir                       // a directory was expected, the path is something else
	NotAbsolute                  // the caller passed a relative path
	PermissionDenied             // EACCES / EPERM
	NoMatch                      // Edit: old text not found
	NotUnique                    // Edit: old text found more than once without ReplaceAll
	NoChange                     // Edit: old and new text are identical
	NotEmpty                     // Edit with empty old text on a file that has content
	InvalidArgument              // a malformed request: bad regexp, unknown file type, bad glob …
	NoSession                    // exec session id unknown (never started, or already reported exited)
	SessionExists                // exec session id requested by the caller is already in use
	StdinClosed                  // write to an exec session whose stdin is not open
	Closed                       // the Runner was closed
	TooLarge                     // a file or line over pvisor's read cap (MaxReadBytes, MaxLineBytes)
	NotRegular                   // a device, FIFO or socket where a file was expected; never opened
)

var kindNames = [...]string{
	KindOther:        "other",
	NotFound:         "not_found",
	IsDir:            "is_dir",
	NotDir:           "not_dir",
	NotAbsolute:      "not_absolute",
	PermissionDenied: "permission_denied",
	NoMatch:          "no_match",
	NotUnique:        "not_unique",
	NoChange:         "no_change",
	NotEmpty:         "not_empty",
	InvalidArgument:  "invalid_argument",
	NoSession:        "no_session",
	SessionExists:    "session_exists",
	StdinClosed:      "stdin_closed",
	Closed:           "closed",
	TooLarge:         "too_large",
	NotRegular:       "not_regular",
}

func (k Kind) String() string {
	if int(k) >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is the error value of every operation in this package. Formatters
// switch on Kind; Count and Index carry the numbers native messages quote.
type Error struct {
	Kind  Kind
	Op    string // "read", "write", "edit", "multi_edit", "glob", "grep", "list", "shell", "exec", "write_stdin"
	Path  string // file or directory concerned, when there is one
	Count int    // NotUnique: occurrences found
	Index int    // MultiEdit: 0-based index of the failing edit; -1 otherwise
	Err   error  // underlying cause, when there is one
}

func (e *Error) Error() string {
	var what string
	switch e.Kind {
	case NotFound:
		what = "does not exist"
	case IsDir:
		what = "is a directory, not a file"
	case NotDir:
		what = "is not a directory"
	case NotAbsolute:
		what = "is not an absolute path; resolve it against the agent's working directory first"
	case PermissionDenied:
		what = "permission denied"
	case NoMatch:
		what = "old text not found in the file"
	case NotUnique:
		what = fmt.Sprintf("old text occurs %d times; give more context or set ReplaceAll", e.Count)
	case NoChange:
		what = "old and new text are identical, nothing to change"
	case NotEmpty:
		what = "empty old text can only create a file or fill an empty one, and this file has content"
	case InvalidArgument:
		what = "invalid argument"
	case NoSession:
		what = "no such exec session (it never started or its exit was already reported)"
	case SessionExists:
		what = "exec session id already in use"
	case StdinClosed:
		what = "stdin is not open for this session; start it with TTY or StdinPipe to write to it"
	case Closed:
		what = "runner is closed"
	default:
		what = "failed"
	}
	msg := e.Op
	if e.Path != "" {
		msg += " " + e.Path
	}
	switch e.Kind {
	case NoSession, SessionExists, StdinClosed:
		msg += fmt.Sprintf(" session %d", e.Count)
	}
	if e.Index >= 0 && e.Op == "multi_edit" {
		msg += fmt.Sprintf(" (edit %d)", e.Index+1)
	}
	msg += ": " + what
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of err if it is (or wraps) an *Error, else KindOther.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindOther
}

func newErr(op, path string, kind Kind, cause error) *Error {
	return &Error{Kind: kind, Op: op, Path: ContainerPath(path), Index: -1, Err: cause}
}

// fsErr maps an os/fs error onto a Kind so that callers never need errno.
func fsErr(op, path string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	kind := KindOther
	switch {
	case errors.Is(err, fs.ErrNotExist):
		kind = NotFound
	case errors.Is(err, fs.ErrPermission):
		kind = PermissionDenied
	case errors.Is(err, syscall.EISDIR):
		kind = IsDir
	case errors.Is(err, syscall.ENOTDIR):
		kind = NotDir
	}
	return newErr(op, path, kind, err)
}
