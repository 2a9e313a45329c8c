package toolenv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/pvisor/pvisor/result"
	toolrun "github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/run/ociimage"
)

// ExecutorContainer runs the tools in a root file system the user gives
// (--container-rootfs DIR, or an OCI image layout, --container-image DIR),
// entered by the tools' own init: no daemon.
const ExecutorContainer = "container"

// ContainerConfig is where a container run's root comes from.
type ContainerConfig struct {
	Rootfs string // a root file system directory, never written
	Image  string // an OCI image layout directory, unpacked per run
}

// checkContainer is CheckRunOptions's part for the container executor.
func checkContainer(executor string, c ContainerConfig) error {
	if executor != ExecutorContainer {
		switch {
		case c.Rootfs != "":
			return configErr("--container-rootfs is for --executor container; add --executor container, or drop it")
		case c.Image != "":
			return configErr("--container-image is for --executor container; add --executor container, or drop it")
		}
		return nil
	}
	switch {
	case c.Rootfs == "" && c.Image == "":
		return configErr("--executor container needs the container's root: add --container-rootfs DIR (a root file system directory) or --container-image DIR (an OCI image layout; TOML [run] rootfs / image)")
	case c.Rootfs != "" && c.Image != "":
		return configErr("--container-rootfs and --container-image both name the container's root: give one")
	case os.Geteuid() != 0:
		return configErr("--executor container needs tool isolation, which needs root (namespaces, mounts, pivot_root): run pvisor as root, or use --executor host")
	}
	dir, flag := c.Rootfs, "--container-rootfs"
	if dir == "" {
		dir, flag = c.Image, "--container-image"
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return configErr("%s %s: not a directory (%v)", flag, dir, err)
	}
	if c.Image != "" {
		if _, err := os.Stat(filepath.Join(dir, "index.json")); err != nil {
			return configErr("--container-image %s: no index.json: not an OCI image layout (make one with 'skopeo copy docker://IMAGE oci:DIR'), or pass a root directory with --container-rootfs", dir)
		}
	}
	return nil
}

// Container puts iso's tools in the run's container root, made on first
// use under stateDir (an overlay of the user's rootfs, or of the image
// unpacked there) with workspace bound at its own path. Without executor
// container iso is returned as it is. CloseContainer, at the end of the
// run, removes the root and every write the tools made to it.
func (t *Tools) Container(iso toolrun.Isolation, stateDir, workspace string) (toolrun.Isolation, error) {
	if t.cfg.Executor != ExecutorContainer {
		return iso, nil
	}
	if !iso.Enabled {
		why, _ := t.meta["tool_isolation"].(map[string]any)["missing"].(string)
		return iso, configErr("--executor container needs tool isolation (its init enters the root), which is off: %s; run as root where namespaces are allowed, or use --executor host", why)
	}
	if t.croot == nil {
		if stateDir == "" {
			return iso, fail(result.InternalError, "--executor container: no state dir for the container's layer")
		}
		base := filepath.Join(stateDir, "container")
		meta := map[string]any{}
		lower := t.cfg.Container.Rootfs
		if lower != "" {
			if abs, err := filepath.Abs(lower); err == nil {
				lower = abs
			}
			meta["rootfs"] = lower
		} else {
			lower = filepath.Join(base, "image")
			img, err := ociimage.Unpack(t.cfg.Container.Image, lower)
			if err != nil {
				os.RemoveAll(lower)
				return iso, configErr("--container-image %s: %v", t.cfg.Container.Image, err)
			}
			meta["image"] = t.cfg.Container.Image
			meta["image_digest"] = img.Manifest
			meta["image_layers"] = img.Layers
		}
		c, err := toolrun.MountContainerRoot(lower, filepath.Join(base, "layer"))
		if err != nil {
			return iso, fail(result.ExecutorError, "--executor container: %v", err)
		}
		t.croot, t.cbase = c, base
		meta["writes"] = "an overlay in the state dir, removed with the run: the root given is never written"
		if ro, ok := t.meta["run_options"].(map[string]any); ok {
			ro["container"] = meta
		}
	}
	// Isolation records its mechanisms afresh on every call.
	if ti, ok := t.meta["tool_isolation"].(map[string]any); ok {
		if m, ok := ti["mechanisms"].([]string); ok && !slices.Contains(m, "container-root") {
			ti["mechanisms"] = append(m, "container-root")
		}
	}
	iso.Rootfs, iso.Binds = t.croot.Merged, []string{workspace}
	return iso, nil
}

// CloseContainer unmounts the run's container root and removes its layer
// (and the unpacked image).
func (t *Tools) CloseContainer() error {
	if t.croot == nil {
		return nil
	}
	err := t.croot.Close()
	t.croot = nil
	if err == nil {
		// The unpacked image and the emptied layer's parent.
		err = os.RemoveAll(t.cbase)
	}
	if err != nil {
		return fmt.Errorf("--executor container: %w", err)
	}
	return nil
}
