package overlay

import (
	"fmt"
	"io"
	"syscall"
	"time"
)

// ChangeKind classifies one entry of the upper layer against the original
// merged view (the lower stack before the run).
type ChangeKind string

const (
	Added    ChangeKind = "added"    // nothing was at the path before
	Modified ChangeKind = "modified" // content, metadata or type differs
	Deleted  ChangeKind = "deleted"  // a whiteout, or hidden by an opaque directory
	// Opaque is a directory that was removed and created again: none of its
	// old entries show through. Each old entry that is gone is listed as
	// Deleted; the ones that were recreated are listed as Added or Modified.
	Opaque ChangeKind = "opaque"
)

// FileType is the type of the entry a change is about; for Deleted it is the
// type of what was removed.
type FileType string

const (
	TypeFile    FileType = "file"
	TypeDir     FileType = "dir"
	TypeSymlink FileType = "symlink"
	TypeFIFO    FileType = "fifo"
	TypeChar    FileType = "char-device"
	TypeBlock   FileType = "block-device"
	TypeSocket  FileType = "socket"
)

// Change is one path that differs between the merged view at the end of the
// run and the workspace before it.
type Change struct {
	// Path is relative to the workspace, slash-separated; "." is the
	// workspace directory itself (its mode or owner changed).
	Path string     `json:"path"`
	Kind ChangeKind `json:"kind"`
	Type FileType   `json:"type"`
}

// Report is what Commit did.
type Report struct {
	Mode    CommitMode `json:"mode"`
	Changes []Change   `json:"changes"`
	// Upper is where the changes still are: set for manual, and for apply
	// when it stopped on an error; empty once the layer has been removed.
	Upper string `json:"upper,omitempty"`
	// Outside are the changes tools made outside the workspace, in the
	// root view; Path is absolute. They are never applied: apply and
	// manual keep them in OutsideUpper, drop removes them.
	Outside      []Change `json:"outside_changes,omitempty"`
	OutsideUpper string   `json:"outside_upper,omitempty"`
}

// Options describe the process Run starts inside the isolated view. Run
// re-executes the current binary; main must call ChildMain when IsChild.
type Options struct {
	// Args is the argv of the re-executed binary; Args[0] is only a name.
	Args []string
	// Env is the environment of the worker; nil means os.Environ().
	Env []string
	// Dir is the working directory; "" means the current one. A directory
	// inside Config.Path is entered after the mount, so it is merged.
	Dir string

	Stdin          io.Reader
	Stdout, Stderr io.Writer

	// Grace is how long Run waits after ctx is done and SIGTERM was sent
	// before it kills the whole namespace; 0 means 5 seconds.
	Grace time.Duration

	// Shared are directories outside the workspace that the worker writes
	// for real although it runs in the view of the whole tree (the state
	// and output dirs). They are bound into the view; tools lose the binds
	// (see ToolView), so their writes there land in the upper layer.
	Shared []string
}

// Exit is how the worker ended.
type Exit struct {
	// Code is the worker's exit status, or 128+n when signal n killed it
	// (or killed the namespace), as shells report it.
	Code int
	// Signal is the signal that ended the worker, 0 when it exited.
	Signal syscall.Signal
}

// PreflightError is a reason the overlay cannot be set up here, found
// before anything was created or mounted. The message says what to change.
type PreflightError struct {
	Check string // short name of the failed check, e.g. "capability"
	Msg   string
}

func (e *PreflightError) Error() string { return "overlayfs: " + e.Msg }

// SetupError is a failure inside the namespace child before the worker ran,
// usually the mount itself (the message includes the kernel's explanation).
type SetupError struct {
	Stage   string // "namespace", "mount", "chdir" or "start"
	Message string
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("overlayfs %s: %s", e.Stage, e.Message)
}
