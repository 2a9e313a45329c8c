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
}

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

// Releases are the tested releases in file order.
var Releases = mustParse(versionsTxt)

func mustParse(s string) []Release {
	rs, err := Parse(s)
	if err != nil {
		panic(err) // versions.txt is part of the binary; TestVersionsFile keeps it parseable
	}
	return rs
}

// Parse reads versions.txt: one release per line (agent, package, version,
// binary; the package is npm's unless prefixed "pypi:", then options),
// '#' comments and blank lines ignored.
func Parse(s string) ([]Release, error) {
	var out []Release
	for n, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 4 {
			return nil, fmt.Errorf("versions.txt:%d: want 4 fields (agent, package, version, binary) and options, got %d", n+1, len(f))
		}
		if _, err := ParseSemver(f[2]); err != nil {
			return nil, fmt.Errorf("versions.txt:%d: %w", n+1, err)
		}
		rel := Release{Agent: f[0], Package: f[1], Version: f[2], Binary: f[3], Registry: RegistryNPM}
		if name, ok := strings.CutPrefix(f[1], "pypi:"); ok {
			if name == "" {
				return nil, fmt.Errorf("versions.txt:%d: \"pypi:\" names no package", n+1)
			}
			rel.Package, rel.Registry = name, RegistryPyPI
		}
		if err := rel.options(f[4:]); err != nil {
			return nil, fmt.Errorf("versions.txt:%d: %w", n+1, err)
		}
		out = append(out, rel)
	}
	return out, nil
}

// options reads a line's options: python>=X.Y and with=a,b, PyPI lines
// only (install-clis.sh reads them the same way).
func (r *Release) options(opts []string) error {
	for _, o := range opts {
		if r.Registry != RegistryPyPI {
			return fmt.Errorf("option %q: only pypi: packages take options", o)
		}
		switch {
		case strings.HasPrefix(o, "python>="):
			v := strings.TrimPrefix(o, "python>=")
			if !pythonVersion.MatchString(v) {
				return fmt.Errorf("option %q: want python>=3.N", o)
			}
			r.Python = v
		case strings.HasPrefix(o, "with="):
			for _, p := range strings.Split(strings.TrimPrefix(o, "with="), ",") {
				if !pypiName.MatchString(p) {
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
	pythonVersion = regexp.MustCompile(`^3\.\d+$`)
	pypiName      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// Of returns the tested releases of agent, oldest first.
func Of(agent string) []Release {
	var out []Release
	for _, r := range Releases {
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
