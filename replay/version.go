package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// VersionRange is the agent versions a continuation was tested with: Min
// inclusive, Below exclusive (">=0.150.0 <0.180.0").
type VersionRange struct{ Min, Below string }

func (r VersionRange) String() string { return ">=" + r.Min + " <" + r.Below }

// Contains reports whether v lies in the range. A pre-release sorts before its
// release, as in semver: 0.180.0-alpha.1 is below 0.180.0.
func (r VersionRange) Contains(v string) (bool, error) {
	got, err := parseSemver(v)
	if err != nil {
		return false, err
	}
	lo, err := parseSemver(r.Min)
	if err != nil {
		return false, err
	}
	hi, err := parseSemver(r.Below)
	if err != nil {
		return false, err
	}
	return got.compare(lo) >= 0 && got.compare(hi) < 0, nil
}

type semver struct {
	n   [3]int
	pre string
}

var semverRe = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$`)

func parseSemver(s string) (semver, error) {
	m := semverRe.FindStringSubmatch(s)
	if m == nil {
		return semver{}, fmt.Errorf("%q is not a version like 1.2.3", s)
	}
	var v semver
	for i := range v.n {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return semver{}, fmt.Errorf("version %q: %w", s, err)
		}
		v.n[i] = n
	}
	v.pre = m[4]
	return v, nil
}

func (a semver) compare(b semver) int {
	for i := range a.n {
		if a.n[i] != b.n[i] {
			if a.n[i] < b.n[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case a.pre == b.pre:
		return 0
	case a.pre == "":
		return 1
	case b.pre == "":
		return -1
	}
	return comparePre(a.pre, b.pre)
}

// comparePre orders pre-release identifiers: numeric ones numerically and
// below alphanumeric ones, a shorter list first when one is a prefix.
func comparePre(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, xerr := strconv.Atoi(as[i])
		y, yerr := strconv.Atoi(bs[i])
		switch {
		case xerr == nil && yerr == nil && x != y:
			if x < y {
				return -1
			}
			return 1
		case xerr == nil && yerr != nil:
			return -1
		case xerr != nil && yerr == nil:
			return 1
		case as[i] != bs[i]:
			return strings.Compare(as[i], bs[i])
		}
	}
	return len(as) - len(bs)
}

// versionInText finds x.y.z (with a pre-release) not inside a longer dotted
// number, after anything: "codex-cli 0.171.0", "pi v0.73.1".
var versionInText = regexp.MustCompile(`(?:^|[^\d.])(\d+\.\d+\.\d+(?:-[0-9A-Za-z][0-9A-Za-z.-]*)?)`)

// Version probing limits: a CLI that hangs or floods on --version must not
// stall the run or fill memory.
const (
	probeTimeout = 20 * time.Second
	probeMaxOut  = 64 << 10
)

// isolatedHome returns env with HOME, TMPDIR and the XDG directories
// moved under dir (created): an agent CLI run only to print its version
// still writes caches and temp files (~/.codex/tmp), which belong in the
// state dir, not in the user's home or /tmp.
func isolatedHome(env []string, dir string) ([]string, error) {
	vars := map[string]string{"HOME": "home", "TMPDIR": "tmp", "XDG_CONFIG_HOME": "home/.config",
		"XDG_CACHE_HOME": "home/.cache", "XDG_DATA_HOME": "home/.local/share", "XDG_STATE_HOME": "home/.local/state"}
	out := make([]string, 0, len(env)+len(vars))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := vars[name]; !ok {
			out = append(out, kv)
		}
	}
	for name, sub := range vars {
		p := filepath.Join(dir, sub)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, err
		}
		out = append(out, name+"="+p)
	}
	sort.Strings(out)
	return out, nil
}

// probeVersion runs `entry --version` with env and returns the first version
// number it prints (some CLIs print on stderr).
func probeVersion(ctx context.Context, entry string, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, entry, "--version")
	cmd.Env = env
	out := &cappedBuffer{max: probeMaxOut}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	text := strings.TrimSpace(out.String())
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s --version did not finish within %s", entry, probeTimeout)
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("%s --version failed (%v): %s", entry, err, firstLine(text))
		}
		return "", fmt.Errorf("%s --version: %v", entry, err)
	}
	m := versionInText.FindStringSubmatch(text)
	if m == nil {
		return "", fmt.Errorf("%s --version printed no version number: %q", entry, firstLine(text))
	}
	return m[1], nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// cappedBuffer keeps the first max bytes written and discards the rest.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
