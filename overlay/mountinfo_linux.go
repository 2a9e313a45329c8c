package overlay

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// mountEntry is the part of one /proc/<pid>/mountinfo line this package needs.
type mountEntry struct {
	MountPoint string
	MountOpts  string // per-mount options, e.g. "ro,nosuid"
	FSType     string
	Source     string
	SuperOpts  string
}

// readMountinfo reads the calling thread's view: a goroutine locked to a
// thread that unshared its mount namespace must not see the process's view.
func readMountinfo() ([]mountEntry, error) {
	f, err := os.Open("/proc/thread-self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountinfo(f)
}

// parseMountinfo parses proc(5) mountinfo: "id parent maj:min root
// mountpoint options [optional...] - fstype source superoptions".
func parseMountinfo(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			return nil, fmt.Errorf("mountinfo line %d has no separator: %q", n, line)
		}
		head := strings.Fields(pre)
		tail := strings.Fields(post)
		if len(head) < 6 || len(tail) < 2 {
			return nil, fmt.Errorf("mountinfo line %d is short: %q", n, line)
		}
		e := mountEntry{
			MountPoint: unescapeMountinfo(head[4]),
			MountOpts:  head[5],
			FSType:     tail[0],
			Source:     unescapeMountinfo(tail[1]),
		}
		if len(tail) > 2 {
			e.SuperOpts = unescapeMountinfo(tail[2])
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// unescapeMountinfo undoes the kernel's octal escaping of space, tab,
// newline and backslash (e.g. "\040").
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// mountsAt returns the entries mounted exactly at path, bottom first.
func mountsAt(entries []mountEntry, path string) []mountEntry {
	var out []mountEntry
	for _, e := range entries {
		if e.MountPoint == path {
			out = append(out, e)
		}
	}
	return out
}

// mountsBelow returns the mount points strictly inside dir.
func mountsBelow(entries []mountEntry, dir string) []string {
	prefix := strings.TrimSuffix(dir, "/") + "/"
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.MountPoint, prefix) {
			out = append(out, e.MountPoint)
		}
	}
	return out
}
