//go:build !linux

package overlay

import (
	"context"
	"errors"
)

// errUnsupported is returned on systems without overlayfs and mount
// namespaces, so pvisor still builds there and fails only when asked for
// --overlayfs-path.
var errUnsupported = &PreflightError{Check: "os", Msg: "overlay workspaces need Linux: run without --overlayfs-path"}

func IsChild() bool                                  { return false }
func InNamespace() bool                              { return false }
func Current() (Config, Layout, bool)                { return Config{}, Layout{}, false }
func ChildMain(func() int)                           { panic(errors.New("overlay.ChildMain called outside Linux")) }
func Preflight(cfg Config, _ Layout) (Config, error) { return cfg, errUnsupported }
func Mount(Config, Layout) error                     { return errUnsupported }
func Unmount(string) error                           { return errUnsupported }
func Changes(Config, Layout) ([]Change, error)       { return nil, errUnsupported }
func Commit(Config, Layout) (Report, error)          { return Report{}, errUnsupported }
func ToolView() ([]string, bool, string)             { return nil, false, "" }
func DetachShared([]string) error                    { return errUnsupported }
func OutsideChanges(Layout) ([]Change, error)        { return nil, errUnsupported }

func Run(context.Context, Config, Layout, Options) (Exit, error) {
	return Exit{}, errUnsupported
}
