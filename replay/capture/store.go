package capture

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/run/userfile"
)

// StoreMarker marks a directory as a capture store, so capture never
// writes into a directory that holds something else.
const StoreMarker = "pvisor-store.json"

const storeSchema = "pvisor.capture-store/v1"

// OpenStore makes dir a store when it is new or empty and refuses any
// other directory without the marker.
func OpenStore(dir string) error {
	marker := filepath.Join(dir, StoreMarker)
	data, err := os.ReadFile(marker)
	if err == nil {
		var m struct {
			SchemaVersion string `json:"schema_version"`
		}
		if json.Unmarshal(data, &m) != nil || m.SchemaVersion != storeSchema {
			return fail(result.ConfigurationError, "%s is not a %s marker: is %s a capture store of another tool?", marker, storeSchema, dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fail(result.ConfigurationError, "capture store %s: %v", dir, err)
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fail(result.WorkspaceError, "capture store: %v", err)
		}
	case err != nil:
		return fail(result.ConfigurationError, "capture store %s: %v (pass a directory with --store)", dir, err)
	case len(entries) > 0:
		return fail(result.ConfigurationError, "%s is not a capture store (no %s) and is not empty: pass a new or empty directory with --store", dir, StoreMarker)
	}
	return os.WriteFile(marker, []byte(`{"schema_version":"`+storeSchema+`"}`+"\n"), 0o600)
}

// Load reads the manifest of the bundle in dir and checks every file it
// lists against its size and SHA-256; a symlink, a path outside files/ or
// a file the manifest does not list makes dir not a bundle.
func Load(dir string) (*Manifest, error) {
	data, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil || m.SchemaVersion != Schema {
		return nil, fail(result.ConfigurationError, "%s is not a %s manifest (%v)", filepath.Join(dir, ManifestName), Schema, err)
	}
	// The limits of a capture bound what is read here: a manifest cannot
	// make Load hash more than a capture would have copied.
	if len(m.Files) > DefaultLimits.MaxFiles {
		return nil, fail(result.ConfigurationError, "bundle %s lists %d files, more than the %d a capture holds", dir, len(m.Files), DefaultLimits.MaxFiles)
	}
	listed := map[string]bool{}
	for _, f := range m.Files {
		if f.Size < 0 || f.Size > DefaultLimits.MaxFileBytes {
			return nil, fail(result.ConfigurationError, "bundle %s lists %s with %d bytes, outside the %d-byte limit of a capture", dir, f.Path, f.Size, DefaultLimits.MaxFileBytes)
		}
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
			return nil, fail(result.ConfigurationError, "bundle %s lists %q, a path outside the bundle", dir, f.Path)
		}
		if listed[filepath.FromSlash(f.Path)] {
			return nil, fail(result.ConfigurationError, "bundle %s lists %s twice: a manifest names each file once; capture the session again", dir, f.Path)
		}
		listed[filepath.FromSlash(f.Path)] = true
		if err := checkFile(filepath.Join(dir, FilesDir, filepath.FromSlash(f.Path)), f); err != nil {
			return nil, err
		}
	}
	err = filepath.WalkDir(filepath.Join(dir, FilesDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(dir, FilesDir), p)
		if !listed[rel] {
			return fail(result.ConfigurationError, "bundle %s holds %s, which its manifest does not list", dir, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &m, nil
}

func checkFile(path string, f File) error {
	in, _, err := userfile.Open(path, userfile.Policy{What: "bundle file", Max: DefaultLimits.MaxFileBytes})
	if userfile.IsRefusal(err) {
		return fail(result.ConfigurationError, "%v", err)
	} else if err != nil {
		return fail(result.ConfigurationError, "bundle file %s: %v", path, err)
	}
	defer in.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(in, f.Size+1))
	if err != nil {
		return err
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != f.Size || sum != f.SHA256 {
		return fail(result.ConfigurationError, "bundle file %s does not match its manifest (%d bytes, sha256 %s; manifest: %d, %s)", path, n, sum, f.Size, f.SHA256)
	}
	return nil
}

// MaxManifestBytes caps a bundle's manifest.json: 4096 files of a few
// hundred bytes each fit many times over.
const MaxManifestBytes = 1 << 20

// readManifest reads dir's manifest as a user-named file: regular, not a
// symlink, at most MaxManifestBytes.
func readManifest(dir string) ([]byte, error) {
	data, err := userfile.ReadAll(filepath.Join(dir, ManifestName), userfile.Policy{What: "bundle manifest", Max: MaxManifestBytes})
	if err != nil {
		return nil, fail(result.ConfigurationError, "%s is not a capture bundle: %v", dir, err)
	}
	return data, nil
}
