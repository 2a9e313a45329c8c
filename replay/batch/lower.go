package batch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/overlay"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/workspace"
)

// Workspace strategies: a private copy per run, or one shared read-only
// lower with a per-run overlay upper (no copy: faster for large repos;
// needs root and overlayfs).
const (
	WorkspacesCopy    = "copy"
	WorkspacesOverlay = "overlay"
)

// checkOverlay says whether the overlay for a workspace can be mounted
// here, with what to change when not. A tarball is unpacked only when the
// batch runs, so for it the machine is checked with the tarball's
// directory and a layout that lies inside nothing.
func checkOverlay(src, stateRoot string) error {
	kind, err := workspace.Kind(src)
	if err != nil {
		return nil // reported as a workspace problem
	}
	path, layout := src, overlay.NewLayout(filepath.Join(stateRoot, "overlay-preflight"))
	if kind != "dir" {
		path, layout = filepath.Dir(src), overlay.NewLayout(filepath.Join(string(filepath.Separator), "pvisor-overlay-preflight"))
	}
	_, err = overlay.Preflight(overlay.Config{Path: path, Commit: overlay.CommitManual}, layout)
	return err
}

// overlayWorkspace points req at a shared lower with a per-run upper: the
// replay mounts the overlay in its own namespace and keeps the run's
// changes in its state dir (commit manual), so the lower never changes.
func overlayWorkspace(req *replay.Request, src string, l Layout) error {
	lower, err := sharedLower(src, l)
	if err != nil {
		return err
	}
	req.Workspace = lower
	req.Overlay = replay.OverlayConfig{Path: lower, Commit: string(overlay.CommitManual)}
	return nil
}

// sharedLower is src itself for a directory; a tarball is unpacked once per
// output dir (atomically, so shards sharing the dir can race for it).
func sharedLower(src string, l Layout) (string, error) {
	kind, err := workspace.Kind(src)
	if err != nil || kind == "dir" {
		return src, err
	}
	st, err := os.Stat(src)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d", src, st.Size(), st.ModTime().UnixNano())))
	dst := filepath.Join(l.Out, ".batch", "lower", hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".unpack-*")
	if err != nil {
		return "", err
	}
	if err := workspace.Fresh(src, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.RemoveAll(tmp)
		if _, statErr := os.Stat(dst); statErr == nil || !errors.Is(statErr, fs.ErrNotExist) {
			return dst, nil // another run or shard won the race
		}
		return "", err
	}
	return dst, nil
}
