package trajectory

import "os"

// AssetInliner is implemented by formats whose files can name other files
// the agent read when it started, outside the session (SWE-agent's problem
// statement from a file: pVisor's --trajectory-assets). Given the directory
// those files were copied to, opened as a root that no path can leave,
// InlineAssets returns the prefix WritePrefix wrote with each such
// reference replaced by the file's content, so the prefix stands alone, and
// what it inlined. A prefix naming no file comes back unchanged with none.
// A reference that is absolute, leaves the root or names a missing or
// oversized file is an error that says which field named it.
type AssetInliner interface {
	InlineAssets(prefix []byte, assets *os.Root) ([]byte, []InlinedAsset, error)
}

// InlinedAsset is one file InlineAssets put into a prefix.
type InlinedAsset struct {
	Field  string `json:"field"` // where the prefix named it (replay_config.problem_statement)
	Path   string `json:"path"`  // as the prefix named it, relative to the assets dir
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// MaxAssetBytes bounds one inlined file: a problem statement, not a
// repository (the prefix is held in memory).
const MaxAssetBytes = 4 << 20
