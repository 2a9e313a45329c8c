package overlay

import (
	"fmt"
	"path/filepath"
	"strings"
)

// CommitMode says what happens to the upper layer once the isolated run is over.
type CommitMode string

const (
	// CommitManual leaves the upper layer in the state dir for a person or a
	// later command to inspect; the workspace is untouched. It is the default.
	CommitManual CommitMode = "manual"
	// CommitApply copies the changes into the workspace, then removes the layer.
	CommitApply CommitMode = "apply"
	// CommitDrop discards the changes; the workspace stays byte-identical.
	CommitDrop CommitMode = "drop"
)

// ParseCommitMode accepts the values of --overlayfs-commit and TOML
// [overlayfs] commit. The empty string means CommitManual, as in pVisor.
func ParseCommitMode(s string) (CommitMode, error) {
	switch m := CommitMode(strings.TrimSpace(s)); m {
	case "":
		return CommitManual, nil
	case CommitManual, CommitApply, CommitDrop:
		return m, nil
	}
	return "", fmt.Errorf("unknown overlayfs commit mode %q: use manual, apply or drop", s)
}

// Config is one overlay-managed workspace: --overlayfs-path, the repeatable
// --overlayfs-compose and --overlayfs-commit (TOML [overlayfs] path, compose,
// commit).
type Config struct {
	// Path is the workspace. It becomes the top lower layer, and the merged
	// view is mounted over it, so processes inside see it at the same path.
	Path string `json:"path"`
	// Compose are extra read-only lower layers below Path, topmost first.
	// They are never written; Commit writes only into Path.
	Compose []string `json:"compose,omitempty"`
	// Commit is what Commit does with the upper layer; "" means manual.
	Commit CommitMode `json:"commit,omitempty"`
}

// lowers is the lower-layer stack, topmost first, as overlayfs stacks it.
func (c Config) lowers() []string {
	return append([]string{c.Path}, c.Compose...)
}

// Layout is where one run keeps its overlay layers. Upper receives every
// write made through the merged view; Work is overlayfs's scratch directory
// and must be on the same filesystem as Upper.
type Layout struct {
	Dir   string `json:"dir"`
	Upper string `json:"upper"`
	Work  string `json:"work"`
	// Root is where init mounts the view of the whole file tree that the
	// worker and its tools run in (see the package doc,
	// "Outside the workspace"). RootUpper and RootWork hold one numbered
	// upper and work directory per filesystem captured there; RootParts
	// lists which filesystem each number is.
	Root      string `json:"root"`
	RootUpper string `json:"root_upper"`
	RootWork  string `json:"root_work"`
	RootParts string `json:"root_parts"`
}

// NewLayout places the layers under <stateDir>/overlayfs. A relative state
// dir is made absolute against the current directory, because the namespace
// child may start elsewhere.
func NewLayout(stateDir string) Layout {
	dir, err := filepath.Abs(filepath.Join(stateDir, "overlayfs"))
	if err != nil {
		dir = filepath.Clean(filepath.Join(stateDir, "overlayfs"))
	}
	return Layout{
		Dir:   dir,
		Upper: filepath.Join(dir, "upper"),
		Work:  filepath.Join(dir, "work"),

		Root:      filepath.Join(dir, "root"),
		RootUpper: filepath.Join(dir, "root-upper"),
		RootWork:  filepath.Join(dir, "root-work"),
		RootParts: filepath.Join(dir, "root-parts.json"),
	}
}
