// Package ociimage unpacks an OCI image layout directory (index.json,
// blobs/sha256/…) into a root file system for --executor container. The
// image is untrusted input: blobs are verified against their digests,
// reads and the unpacked size are bounded, no entry may name a path
// outside the root (absolute, "..", or through a link), device nodes are
// not made.
package ociimage

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"

	toolrun "github.com/pvisor/pvisor/run"
)

// Limits bound what one image may make; variables so tests can lower them.
var (
	// MaxBytes is the total size of the regular files unpacked.
	MaxBytes int64 = 8 << 30
	// MaxEntries is the number of tar entries over all layers.
	MaxEntries = 1 << 20
	// maxJSON caps index.json and manifests.
	maxJSON int64 = 4 << 20
)

// Descriptor is an OCI content descriptor.
type Descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	Platform  *struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	} `json:"platform,omitempty"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
	Layers        []Descriptor `json:"layers"` // set when the blob is a manifest
}

// Image is what was unpacked.
type Image struct {
	// Manifest is the digest of the image manifest whose layers were
	// applied, the image's identity in the result.
	Manifest string
	Layers   int
	Bytes    int64
}

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Unpack applies the layers of the image in layout (its only manifest, or
// the one for this machine's linux platform) in order into root, which
// must be empty or missing.
func Unpack(layout, root string) (Image, error) {
	var img Image
	var idx index
	if err := readJSON(filepath.Join(layout, "index.json"), maxJSON, &idx); err != nil {
		return img, fmt.Errorf("OCI layout %s: index.json: %w (is it an OCI image layout, e.g. from 'skopeo copy docker://… oci:DIR'?)", layout, err)
	}
	desc, err := pick(idx.Manifests)
	if err != nil {
		return img, fmt.Errorf("OCI layout %s: %w", layout, err)
	}
	// An index may name another index (multi-platform images); one level.
	for depth := 0; ; depth++ {
		var m index
		if err := readBlobJSON(layout, desc, &m); err != nil {
			return img, err
		}
		if len(m.Manifests) == 0 {
			img.Manifest = desc.Digest
			if err := os.MkdirAll(root, 0o755); err != nil {
				return img, err
			}
			u := &unpacker{root: root}
			for _, l := range m.Layers {
				if err := u.layer(layout, l); err != nil {
					return img, err
				}
				img.Layers++
			}
			img.Bytes = u.bytes
			return img, nil
		}
		if depth > 0 {
			return img, fmt.Errorf("OCI layout %s: nested image indexes", layout)
		}
		if desc, err = pick(m.Manifests); err != nil {
			return img, fmt.Errorf("OCI layout %s: %w", layout, err)
		}
	}
}

// pick is the only manifest, or the one for linux and this architecture.
func pick(ms []Descriptor) (Descriptor, error) {
	if len(ms) == 1 {
		return ms[0], nil
	}
	for _, m := range ms {
		if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == runtime.GOARCH {
			return m, nil
		}
	}
	return Descriptor{}, fmt.Errorf("%d manifests and none for linux/%s", len(ms), runtime.GOARCH)
}

func readJSON(path string, limit int64, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return err
	}
	if int64(len(data)) > limit {
		return fmt.Errorf("over %d bytes", limit)
	}
	return json.Unmarshal(data, v)
}

// openBlob opens the blob d names, checked as it is read: a reader that
// fails at EOF when the bytes do not match the digest and size.
func openBlob(layout string, d Descriptor) (io.ReadCloser, error) {
	if !digestPattern.MatchString(d.Digest) {
		return nil, fmt.Errorf("OCI blob digest %q: only sha256:<64 hex> is supported", d.Digest)
	}
	f, err := os.Open(filepath.Join(layout, "blobs", "sha256", strings.TrimPrefix(d.Digest, "sha256:")))
	if err != nil {
		return nil, fmt.Errorf("OCI blob %s: %w", d.Digest, err)
	}
	return &verified{f: f, want: d, h: sha256.New()}, nil
}

type verified struct {
	f    *os.File
	want Descriptor
	h    interface {
		io.Writer
		Sum([]byte) []byte
	}
	n int64
}

func (v *verified) Read(b []byte) (int, error) {
	n, err := v.f.Read(b)
	v.h.Write(b[:n])
	v.n += int64(n)
	if v.want.Size > 0 && v.n > v.want.Size {
		return n, fmt.Errorf("OCI blob %s is larger than its descriptor's %d bytes", v.want.Digest, v.want.Size)
	}
	if err == io.EOF {
		if got := "sha256:" + hex.EncodeToString(v.h.Sum(nil)); got != v.want.Digest {
			return n, fmt.Errorf("OCI blob %s: content hashes to %s", v.want.Digest, got)
		}
	}
	return n, err
}

func (v *verified) Close() error { return v.f.Close() }

func readBlobJSON(layout string, d Descriptor, out any) error {
	if d.Size > maxJSON {
		return fmt.Errorf("OCI manifest %s: %d bytes, over %d", d.Digest, d.Size, maxJSON)
	}
	r, err := openBlob(layout, d)
	if err != nil {
		return err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxJSON+1))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("OCI manifest %s: %w", d.Digest, err)
	}
	return nil
}

type unpacker struct {
	root    string
	bytes   int64
	entries int
	// made is what the current layer created: an opaque whiteout hides
	// only the lower layers' entries of its directory.
	made map[string]bool
}

func (u *unpacker) layer(layout string, d Descriptor) error {
	r, err := openBlob(layout, d)
	if err != nil {
		return err
	}
	defer r.Close()
	var tr io.Reader = r
	switch mt := d.MediaType; {
	case strings.HasSuffix(mt, "+gzip") || strings.HasSuffix(mt, ".tar.gzip") || strings.HasSuffix(mt, ".gzip"):
		gz, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("OCI layer %s: %w", d.Digest, err)
		}
		defer gz.Close()
		tr = gz
	case strings.HasSuffix(mt, ".tar") || strings.HasSuffix(mt, "diff.tar"):
	default:
		return fmt.Errorf("OCI layer %s: media type %q is not supported (tar or tar+gzip; recompress zstd layers with 'skopeo copy --dest-compress-format gzip')", d.Digest, mt)
	}
	u.made = map[string]bool{}
	t := tar.NewReader(tr)
	for {
		h, err := t.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("OCI layer %s: %w", d.Digest, err)
		}
		if u.entries++; u.entries > MaxEntries {
			return fmt.Errorf("OCI image: over %d entries", MaxEntries)
		}
		if err := u.entry(h, t); err != nil {
			return fmt.Errorf("OCI layer %s: %s: %w", d.Digest, h.Name, err)
		}
	}
	// The rest of the blob, so its digest is checked even after the tar's
	// end marker.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	return nil
}

// clean is the entry's name as a relative path below the root.
func clean(name string) (string, error) {
	if strings.HasPrefix(name, "/") {
		return "", errors.New("absolute path in a layer")
	}
	for _, c := range strings.Split(name, "/") {
		if c == ".." {
			return "", errors.New("'..' in a layer path")
		}
	}
	return filepath.Clean("/" + name)[1:], nil
}

func (u *unpacker) entry(h *tar.Header, body io.Reader) error {
	rel, err := clean(h.Name)
	if err != nil {
		return err
	}
	if rel == "" {
		return nil // "./", the root itself
	}
	dir, base := filepath.Split(rel)
	// The parent as the container would see it: links followed inside root.
	parent, err := toolrun.ResolveIn(u.root, "/"+dir)
	if err != nil {
		return err
	}
	if base == ".wh..wh..opq" {
		return u.opaque(parent, "/"+strings.TrimSuffix(dir, "/"))
	}
	if name, ok := strings.CutPrefix(base, ".wh."); ok {
		return os.RemoveAll(filepath.Join(parent, name))
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	target := filepath.Join(parent, base)
	u.made[filepath.Join("/", dir, base)] = true
	if fi, err := os.Lstat(target); err == nil && !(fi.IsDir() && h.Typeflag == tar.TypeDir) {
		if err := os.RemoveAll(target); err != nil {
			return err
		}
	}
	mode := os.FileMode(h.Mode) & (os.ModePerm | os.ModeSticky)
	if h.Mode&0o4000 != 0 {
		mode |= os.ModeSetuid
	}
	if h.Mode&0o2000 != 0 {
		mode |= os.ModeSetgid
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
	case tar.TypeReg:
		if u.bytes += h.Size; u.bytes > MaxBytes {
			return fmt.Errorf("the image unpacks to over %d bytes", MaxBytes)
		}
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, io.LimitReader(body, h.Size))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	case tar.TypeSymlink:
		// Any target: the container resolves it inside its root, and so
		// do pvisor's file tools (run.ResolveIn).
		return lchown(os.Symlink(h.Linkname, target), target, h)
	case tar.TypeLink:
		lrel, err := clean(h.Linkname)
		if err != nil {
			return err
		}
		src, err := toolrun.ResolveIn(u.root, "/"+lrel)
		if err != nil {
			return err
		}
		if fi, err := os.Lstat(src); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("hard link to %s, which is not a regular file of the image", h.Linkname)
		}
		return os.Link(src, target)
	case tar.TypeFifo:
		if err := syscall.Mkfifo(target, 0o600); err != nil {
			return err
		}
	case tar.TypeChar, tar.TypeBlock:
		return nil // no device nodes from an image; the container's /dev has its own
	default:
		return nil // PAX and GNU extension headers are read by archive/tar
	}
	if err := lchown(nil, target, h); err != nil {
		return err
	}
	if err := os.Chmod(target, mode); err != nil {
		return err
	}
	return os.Chtimes(target, h.ModTime, h.ModTime)
}

// opaque empties dir (its path here, and inside the root) of what the
// lower layers put there.
func (u *unpacker) opaque(here, inside string) error {
	ents, err := os.ReadDir(here)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !u.made[filepath.Join(inside, e.Name())] {
			if err := os.RemoveAll(filepath.Join(here, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func lchown(err error, path string, h *tar.Header) error {
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return nil
	}
	return os.Lchown(path, h.Uid, h.Gid)
}
