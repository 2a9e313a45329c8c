//go:build linux

package overlay

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseCommitMode(t *testing.T) {
	cases := []struct {
		in      string
		want    CommitMode
		wantErr bool
	}{
		{"", CommitManual, false},
		{"manual", CommitManual, false},
		{"apply", CommitApply, false},
		{" drop ", CommitDrop, false},
		{"Apply", "", true},
		{"keep", "", true},
	}
	for _, tc := range cases {
		got, err := ParseCommitMode(tc.in)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("ParseCommitMode(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "manual, apply or drop") {
			t.Errorf("error %q does not list the valid modes", err)
		}
	}
}

func TestNewLayout(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, _ := filepath.Abs(".")
	got := NewLayout("state")
	want := Layout{
		Dir:   filepath.Join(wd, "state/overlayfs"),
		Upper: filepath.Join(wd, "state/overlayfs/upper"),
		Work:  filepath.Join(wd, "state/overlayfs/work"),

		Root:      filepath.Join(wd, "state/overlayfs/root"),
		RootUpper: filepath.Join(wd, "state/overlayfs/root-upper"),
		RootWork:  filepath.Join(wd, "state/overlayfs/root-work"),
		RootParts: filepath.Join(wd, "state/overlayfs/root-parts.json"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewLayout (-want +got):\n%s", diff)
	}
}

func TestParseMountinfo(t *testing.T) {
	in := "22 27 0:21 / /proc rw,relatime - proc proc rw\n" +
		"65 43 0:39 / /tmp/a\\040b\\134c rw,relatime shared:5 master:1 - overlay pvisor rw,lowerdir=/x\\040y,upperdir=/u\n" +
		"\n"
	got, err := parseMountinfo(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []mountEntry{
		{MountPoint: "/proc", MountOpts: "rw,relatime", FSType: "proc", Source: "proc", SuperOpts: "rw"},
		{MountPoint: `/tmp/a b\c`, MountOpts: "rw,relatime", FSType: "overlay", Source: "pvisor", SuperOpts: "rw,lowerdir=/x y,upperdir=/u"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseMountinfo (-want +got):\n%s", diff)
	}
	if below := mountsBelow(got, "/tmp"); !cmp.Equal(below, []string{`/tmp/a b\c`}) {
		t.Errorf("mountsBelow(/tmp) = %q", below)
	}
	if below := mountsBelow(got, "/tmp/a"); len(below) != 0 {
		t.Errorf("mountsBelow(/tmp/a) = %q, want none (not a path prefix)", below)
	}
	for _, bad := range []string{"1 2 3\n", "1 2 0:1 / /x rw - only\n"} {
		if _, err := parseMountinfo(strings.NewReader(bad)); err == nil {
			t.Errorf("parseMountinfo(%q) succeeded", bad)
		}
	}
}
