package agentcli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/replay/launch"
)

// The version probe starts the agent CLI once more per run: for OpenCode
// about a second of CPU, for Node CLIs a few hundred milliseconds. What it
// printed is kept in the state root, keyed by the file that was run (its
// resolved path, device, inode, size, modification and change times): a CLI
// replaced or upgraded in place is a different key, so the version checks
// see what the binary prints now.
const versionCacheName = ".version-cache.json"

// versionCacheMax bounds the entries kept; the oldest are not tracked, so
// when full the file simply starts over.
const versionCacheMax = 64

type versionEntry struct {
	Key     string `json:"key"`
	Version string `json:"version"`
	Printed string `json:"printed"`
}

// cachedVersion is probeVersion through the cache in stateRoot. A failed
// probe is never cached; a cache that cannot be read or written only costs
// the probe.
func CachedVersion(ctx context.Context, stateRoot, entry string, env []string) (version, printed string, cached bool, err error) {
	path := filepath.Join(stateRoot, versionCacheName)
	key := launch.BinaryKey(entry)
	var entries []versionEntry
	if data, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(data, &entries)
	}
	for _, e := range entries {
		if key != "" && e.Key == key {
			return e.Version, e.Printed, true, nil
		}
	}
	version, printed, err = ProbeVersion(ctx, entry, env)
	if err != nil || key == "" || key != launch.BinaryKey(entry) {
		return version, printed, false, err
	}
	if len(entries) >= versionCacheMax {
		entries = entries[:0]
	}
	entries = append(entries, versionEntry{Key: key, Version: version, Printed: printed})
	if data, err := json.Marshal(entries); err == nil {
		// Runs sharing a state root may write at once: each writes a whole
		// file and renames it, so a reader sees one or the other.
		if tmp, err := os.CreateTemp(stateRoot, versionCacheName+".*"); err == nil {
			_, werr := tmp.Write(data)
			if cerr := tmp.Close(); werr == nil && cerr == nil {
				werr = os.Rename(tmp.Name(), path)
			}
			if werr != nil {
				os.Remove(tmp.Name())
			}
		}
	}
	return version, printed, false, nil
}
