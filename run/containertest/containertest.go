// Package containertest builds small root file systems for tests of
// --executor container: Debian's busybox-static, unpacked, with a link
// per applet, and tiny OCI image layouts.
package containertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// OSRelease is the busybox root's /etc/os-release: a file no host has.
const OSRelease = "ID=pvisor-busybox-test\nNAME=\"pvisor busybox test root\"\n"

var (
	once     sync.Once
	built    string
	buildErr string
)

// Busybox returns a root file system made of busybox-static (built once
// per machine under the temp dir, then shared: tests must not write it,
// which --executor container guarantees by its overlay). It skips the
// test with the reason when apt cannot fetch the package.
func Busybox(t testing.TB) string {
	t.Helper()
	once.Do(func() { built, buildErr = build() })
	if buildErr != "" {
		t.Skip(buildErr)
	}
	return built
}

func build() (string, string) {
	cache := filepath.Join(os.TempDir(), "pvisor-testcache", "busybox-rootfs")
	if _, err := os.Stat(filepath.Join(cache, "etc", "os-release")); err == nil {
		return cache, ""
	}
	for _, tool := range []string{"apt-get", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", "no " + tool + " here to fetch Debian's busybox-static (CI installs it in .ci/run)"
		}
	}
	if err := os.MkdirAll(filepath.Dir(cache), 0o755); err != nil {
		return "", err.Error()
	}
	work, err := os.MkdirTemp(filepath.Dir(cache), "build-")
	if err != nil {
		return "", err.Error()
	}
	defer os.RemoveAll(work)
	// .ci/run downloads it next to the cache; otherwise fetch it here.
	debs, _ := filepath.Glob(filepath.Join(filepath.Dir(cache), "busybox-static_*.deb"))
	if len(debs) == 0 {
		dl := exec.Command("apt-get", "download", "busybox-static")
		dl.Dir = work
		if out, err := dl.CombinedOutput(); err != nil {
			return "", "apt-get download busybox-static: " + err.Error() + ": " + strings.TrimSpace(string(out))
		}
		debs, _ = filepath.Glob(filepath.Join(work, "busybox-static_*.deb"))
	}
	if len(debs) != 1 {
		return "", "apt-get download busybox-static left no single .deb"
	}
	root := filepath.Join(work, "root")
	if out, err := exec.Command("dpkg-deb", "-x", debs[0], root).CombinedOutput(); err != nil {
		return "", "dpkg-deb -x: " + err.Error() + ": " + string(out)
	}
	bb := filepath.Join(root, "bin", "busybox")
	list, err := exec.Command(bb, "--list-full").Output()
	if err != nil {
		return "", "busybox --list-full: " + err.Error()
	}
	for _, applet := range strings.Fields(string(list)) {
		p := filepath.Join(root, applet)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err.Error()
		}
		if err := os.Symlink("/bin/busybox", p); err != nil {
			return "", err.Error()
		}
	}
	files := map[string]string{
		"etc/os-release": OSRelease,
		"etc/passwd":     "root:x:0:0:root:/root:/bin/sh\n",
		"etc/group":      "root:x:0:\n",
		// Agents' shells are bash; busybox's is close enough for tests.
		"bin/bash": "#!/bin/sh\nexec /bin/sh \"$@\"\n",
	}
	for _, d := range []string{"etc", "tmp", "root", "proc", "dev"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return "", err.Error()
		}
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o755); err != nil {
			return "", err.Error()
		}
	}
	_ = os.Chmod(filepath.Join(root, "tmp"), 0o1777)
	if err := os.Rename(root, cache); err != nil {
		if _, serr := os.Stat(filepath.Join(cache, "etc", "os-release")); serr == nil {
			return cache, "" // another test process won the race
		}
		return "", err.Error()
	}
	return cache, ""
}
