package replay

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
)

// checkAssets refuses --trajectory-assets for agents whose trajectories
// name no file outside the session (it would do nothing), and a path that
// is not a directory.
func (r *Request) checkAssets() error {
	if r.TrajectoryAssets == "" {
		return nil
	}
	f, ok := lookupFormat(r.Agent)
	if !ok {
		return nil // refused as an unknown agent
	}
	if _, ok := f.(trajectory.AssetInliner); !ok {
		return configErr("--trajectory-assets: %s trajectories name no files outside the session (only %s's problem statements do); remove it",
			r.Agent, strings.Join(assetAgents(), ", "))
	}
	st, err := os.Stat(r.TrajectoryAssets)
	if err != nil {
		return configErr("--trajectory-assets %s: %v", r.TrajectoryAssets, err)
	}
	if !st.IsDir() {
		return configErr("--trajectory-assets %s is not a directory: pass the directory the trajectory's files are in", r.TrajectoryAssets)
	}
	return nil
}

func assetAgents() []string {
	var out []string
	for _, name := range agentNames() {
		if f, ok := lookupFormat(name); ok {
			if _, ok := f.(trajectory.AssetInliner); ok {
				out = append(out, name)
			}
		}
	}
	return out
}

// inlineAssets puts the files the prefix names into it from
// --trajectory-assets, opened as a root that no path or symlink leaves, and
// records what it inlined (path, size, SHA-256; never the text).
func (r *run) inlineAssets(prefix []byte) ([]byte, error) {
	dir := r.req.TrajectoryAssets
	if dir == "" {
		return prefix, nil
	}
	inl := r.plan.Format.(trajectory.AssetInliner) // checked by Validate
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fail(result.ConfigurationError, "--trajectory-assets %s: %v", dir, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fail(result.ConfigurationError, "--trajectory-assets %s: %v", dir, err)
	}
	defer root.Close()
	out, inlined, err := inl.InlineAssets(prefix, root)
	if err != nil {
		return nil, fail(result.ConfigurationError, "--trajectory-assets %s: %v", dir, err)
	}
	meta := map[string]any{"dir": abs, "inlined": inlined}
	if len(inlined) == 0 {
		meta["inlined"] = []trajectory.InlinedAsset{}
		meta["note"] = "the prefix names no file to inline (its problem statement is not a file): the prefix is as recorded"
		r.warn("--trajectory-assets " + dir + ": " + meta["note"].(string))
	}
	r.res.Metadata["trajectory_assets"] = meta
	return out, nil
}
