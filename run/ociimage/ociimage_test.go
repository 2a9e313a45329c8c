package ociimage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/run/containertest"
)

type E = containertest.Entry

// TestUnpackLayersAndWhiteouts: layers apply in order; a whiteout removes
// a lower file, an opaque directory hides the lower layers' entries but
// not its own layer's; a symlink to an absolute path keeps later entries
// inside the root.
func TestUnpackLayersAndWhiteouts(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	digest := containertest.OCILayout(t, filepath.Join(dir, "img"),
		[]E{{Name: "etc/", Dir: true}, {Name: "etc/a", Body: "a1"}, {Name: "etc/b", Body: "b1"},
			{Name: "opq/x", Body: "x"}, {Name: "./esc", Link: outside}, {Name: "bin/tool", Body: "#!/bin/sh\n", Mode: 0o755}},
		[]E{{Name: "etc/.wh.a"}, {Name: "etc/b", Body: "b2"}, {Name: "opq/y", Body: "y"}, {Name: "opq/.wh..wh..opq"},
			{Name: "esc/pwned", Body: "p"}, {Name: "bin/hard", Hard: "bin/tool"}})
	root := filepath.Join(dir, "root")
	img, err := Unpack(filepath.Join(dir, "img"), root)
	if err != nil {
		t.Fatal(err)
	}
	if img.Manifest != digest || img.Layers != 2 {
		t.Errorf("image %+v, want manifest %s and 2 layers", img, digest)
	}
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(root, p)); return string(b) }
	if _, err := os.Lstat(filepath.Join(root, "etc/a")); err == nil {
		t.Error("etc/a survived its whiteout")
	}
	if read("etc/b") != "b2" || read("opq/y") != "y" || read("bin/hard") != "#!/bin/sh\n" {
		t.Errorf("etc/b %q opq/y %q bin/hard %q", read("etc/b"), read("opq/y"), read("bin/hard"))
	}
	if _, err := os.Lstat(filepath.Join(root, "opq/x")); err == nil {
		t.Error("opq/x survived the opaque whiteout")
	}
	if _, err := os.Lstat(filepath.Join(outside, "pwned")); err == nil {
		t.Fatal("an entry under a symlink to an absolute path was written outside the root")
	}
	if read(outside+"/pwned") != "p" {
		t.Errorf("esc/pwned is not at %s inside the root", outside)
	}
	if fi, err := os.Stat(filepath.Join(root, "bin/tool")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("bin/tool mode %v %v", fi, err)
	}
}

// TestUnpackRefuses: absolute names, "..", a hard link out of the image,
// a blob that does not match its digest and an image over the size bound
// are refused with a reason.
func TestUnpackRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		layer []E
		want  string
		max   int64
	}{
		"absolute": {[]E{{Name: "/etc/passwd", Body: "x"}}, "absolute path", 0},
		"dotdot":   {[]E{{Name: "a/../../x", Body: "x"}}, "'..'", 0},
		"hardlink": {[]E{{Name: "h", Hard: "../../etc/passwd"}}, "'..'", 0},
		"size":     {[]E{{Name: "big", Body: strings.Repeat("x", 100)}}, "over 10 bytes", 10},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			containertest.OCILayout(t, filepath.Join(dir, "img"), tc.layer)
			if tc.max > 0 {
				old := MaxBytes
				MaxBytes = tc.max
				defer func() { MaxBytes = old }()
			}
			_, err := Unpack(filepath.Join(dir, "img"), filepath.Join(dir, "root"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one saying %q", err, tc.want)
			}
		})
	}
	dir := t.TempDir()
	containertest.OCILayout(t, filepath.Join(dir, "img"), []E{{Name: "f", Body: "x"}})
	blobs, _ := filepath.Glob(filepath.Join(dir, "img", "blobs", "sha256", "*"))
	for _, b := range blobs {
		if data, _ := os.ReadFile(b); len(data) > 0 && data[0] == 0x1f { // the gzip'd layer
			data[len(data)-1] ^= 0xff
			os.WriteFile(b, data, 0o644)
		}
	}
	if _, err := Unpack(filepath.Join(dir, "img"), filepath.Join(dir, "root")); err == nil || !strings.Contains(err.Error(), "hashes to") {
		t.Errorf("a tampered layer: err %v", err)
	}
}
