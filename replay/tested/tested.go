// Package tested is the list of agent CLI releases the continuation is
// tested with (versions.txt, read by the e2e install script too) and the
// version ranges derived from it.
package tested

import (
	_ "embed"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

//go:embed versions.txt
var versionsTxt string

// Release is one line of versions.txt.
type Release struct {
	Agent, Package, Version, Binary string
	// Registry is where Package comes from: RegistryNPM, or RegistryPyPI
	// for a package column prefixed "pypi:" (the prefix is not part of
	// Package).
	Registry string
	// Python is the lowest Python a PyPI release's venv needs ("3.12" from
	// an option python>=3.12; "" is any python3), With the packages
	// installed beside it at the same version (option with=a,b).
	Python string
	With   []string
	// Node is the lowest Node.js an npm release needs ("22.19" from an
	// option node>=22.19; "" is whatever node the machine has).
	Node string
}

// Successor records that an agent's CLI moved from one package to another
// (a "successor" line): the release watch checks both, and a CLI from
// either is that agent.
type Successor struct{ Agent, From, To string }

// Registries of versions.txt's package column.
const (
	RegistryNPM  = "npm"
	RegistryPyPI = "pypi"
)

// Path is where testdata/e2e/install-clis.sh installs the release's
// executable under its directory dir (PVISOR_E2E_DIR): npm packages under
// cli/, PyPI packages in a venv per package release under py/.
func (r Release) Path(dir string) string {
	if r.Registry == RegistryPyPI {
		return filepath.Join(dir, "py", r.Package+"@"+r.Version, "bin", r.Binary)
	}
	return filepath.Join(dir, "cli", r.Agent+"@"+r.Version, "node_modules", ".bin", r.Binary)
}

// parsed is versions.txt, parsed on first use: at package init it cost
// every pvisor process's start 0.2 ms.
var parsed = sync.OnceValues(func() ([]Release, []Successor) { return mustParse(versionsTxt) })

// releasesOverride, when set (by tests), stands in for versions.txt's
// releases.
var releasesOverride []Release

// Releases are the tested releases in file order.
func Releases() []Release {
	if releasesOverride != nil {
		return releasesOverride
	}
	rs, _ := parsed()
	return rs
}

// Successors are the moves between packages versions.txt records.
func Successors() []Successor {
	_, ss := parsed()
	return ss
}

func mustParse(s string) ([]Release, []Successor) {
	rs, ss, err := ParseFile(s)
	if err != nil {
		panic(err) // versions.txt is part of the binary; TestVersionsFile keeps it parseable
	}
	return rs, ss
}

// Parse reads the release lines of versions.txt (see ParseFile).
func Parse(s string) ([]Release, error) {
	rs, _, err := ParseFile(s)
	return rs, err
}

// ParseFile reads versions.txt: one release per line (agent, package,
// version, binary; the package is npm's unless prefixed "pypi:", then
// options), or a "successor agent old-package new-package" line; '#'
// comments and blank lines ignored.
func ParseFile(s string) ([]Release, []Successor, error) {
	var out []Release
	var succ []Successor
	for n, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "successor" {
			if len(f) != 4 || f[2] == f[3] {
				return nil, nil, fmt.Errorf("versions.txt:%d: want \"successor AGENT OLD-PACKAGE NEW-PACKAGE\" with two different packages", n+1)
			}
			succ = append(succ, Successor{Agent: f[1], From: f[2], To: f[3]})
			continue
		}
		if len(f) < 4 {
			return nil, nil, fmt.Errorf("versions.txt:%d: want 4 fields (agent, package, version, binary) and options, got %d", n+1, len(f))
		}
		if _, err := ParseSemver(f[2]); err != nil {
			return nil, nil, fmt.Errorf("versions.txt:%d: %w", n+1, err)
		}
		rel := Release{Agent: f[0], Package: f[1], Version: f[2], Binary: f[3], Registry: RegistryNPM}
		if name, ok := strings.CutPrefix(f[1], "pypi:"); ok {
			if name == "" {
				return nil, nil, fmt.Errorf("versions.txt:%d: \"pypi:\" names no package", n+1)
			}
			rel.Package, rel.Registry = name, RegistryPyPI
		}
		if err := rel.options(f[4:]); err != nil {
			return nil, nil, fmt.Errorf("versions.txt:%d: %w", n+1, err)
		}
		out = append(out, rel)
	}
	return out, succ, nil
}

// options reads a line's options: node>=X.Y on npm lines, python>=X.Y
// and with=a,b on PyPI lines (install-clis.sh reads them the same way).
func (r *Release) options(opts []string) error {
	for _, o := range opts {
		if r.Registry != RegistryPyPI {
			v, ok := strings.CutPrefix(o, "node>=")
			if !ok {
				return fmt.Errorf("option %q: an npm line takes only node>=X.Y (python>= and with= are for pypi: packages)", o)
			}
			if !nodeVersion().MatchString(v) {
				return fmt.Errorf("option %q: want node>=X.Y", o)
			}
			r.Node = v
			continue
		}
		switch {
		case strings.HasPrefix(o, "python>="):
			v := strings.TrimPrefix(o, "python>=")
			if !pythonVersion().MatchString(v) {
				return fmt.Errorf("option %q: want python>=3.N", o)
			}
			r.Python = v
		case strings.HasPrefix(o, "with="):
			for _, p := range strings.Split(strings.TrimPrefix(o, "with="), ",") {
				if !pypiName().MatchString(p) {
					return fmt.Errorf("option %q: %q is not a package name", o, p)
				}
				r.With = append(r.With, p)
			}
		default:
			return fmt.Errorf("unknown option %q (known: python>=3.N, with=pkg,pkg)", o)
		}
	}
	return nil
}

var (
	pythonVersion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^3\.\d+$`) })
	nodeVersion   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+\.\d+$`) })
	pypiName      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })
)

// Of returns the tested releases of agent, oldest first.
func Of(agent string) []Release {
	var out []Release
	for _, r := range Releases() {
		if r.Agent == agent {
			out = append(out, r)
		}
	}
	for i := 1; i < len(out); i++ { // insertion sort: a handful of lines
		for j := i; j > 0 && MustSemver(out[j].Version).Compare(MustSemver(out[j-1].Version)) < 0; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// RangeOf is the span of agent's tested releases; the zero Range (which
// contains nothing) when none is listed.
func RangeOf(agent string) Range {
	rs := Of(agent)
	if len(rs) == 0 {
		return Range{}
	}
	return Range{Min: rs[0].Version, Max: rs[len(rs)-1].Version}
}

// PackagesOf is every package a CLI of agent may come from: its lines'
// packages and the packages it moved to or from, in file order.
func PackagesOf(agent string) []string {
	var out []string
	add := func(p string) {
		for _, q := range out {
			if q == p {
				return
			}
		}
		out = append(out, p)
	}
	for _, r := range Releases() {
		if r.Agent == agent {
			add(r.Package)
		}
	}
	for _, s := range Successors() {
		if s.Agent == agent {
			add(s.From)
			add(s.To)
		}
	}
	return out
}
