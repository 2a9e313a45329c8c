package containertest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Entry is one tar entry of a test layer: a file (Body), a directory
// (Dir), a symlink (Link) or a hard link (Hard).
type Entry struct {
	Name string
	Body string
	Dir  bool
	Link string
	Hard string
	Mode int64
}

// OCILayout writes an OCI image layout to dir with one gzip'd tar layer
// per element of layers, applied in order, and returns the manifest's
// digest.
func OCILayout(t testing.TB, dir string, layers ...[]Entry) string {
	t.Helper()
	blob := func(data []byte) map[string]any {
		sum := sha256.Sum256(data)
		d := "sha256:" + hex.EncodeToString(sum[:])
		p := filepath.Join(dir, "blobs", "sha256", hex.EncodeToString(sum[:]))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"digest": d, "size": len(data)}
	}
	var descs []map[string]any
	for _, l := range layers {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		for _, e := range l {
			h := &tar.Header{Name: e.Name, Mode: e.Mode, Typeflag: tar.TypeReg, Size: int64(len(e.Body))}
			if h.Mode == 0 {
				h.Mode = 0o644
			}
			switch {
			case e.Dir:
				h.Typeflag, h.Size, h.Mode = tar.TypeDir, 0, 0o755
			case e.Link != "":
				h.Typeflag, h.Size, h.Linkname = tar.TypeSymlink, 0, e.Link
			case e.Hard != "":
				h.Typeflag, h.Size, h.Linkname = tar.TypeLink, 0, e.Hard
			}
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			if h.Size > 0 {
				tw.Write([]byte(e.Body))
			}
		}
		tw.Close()
		gz.Close()
		d := blob(buf.Bytes())
		d["mediaType"] = "application/vnd.oci.image.layer.v1.tar+gzip"
		descs = append(descs, d)
	}
	cfg := blob([]byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`))
	cfg["mediaType"] = "application/vnd.oci.image.config.v1+json"
	man, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": cfg, "layers": descs})
	md := blob(man)
	md["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
	idx, _ := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []any{md}})
	if err := os.WriteFile(filepath.Join(dir, "index.json"), idx, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return md["digest"].(string)
}
