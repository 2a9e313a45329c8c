package tested

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Range is a span of tested versions, both ends inclusive. The zero Range
// contains nothing.
type Range struct{ Min, Max string }

func (r Range) String() string {
	if r.Min == "" {
		return "(none tested)"
	}
	if r.Min == r.Max {
		return "=" + r.Min
	}
	return ">=" + r.Min + " <=" + r.Max
}

// Contains reports whether v lies in the range. A pre-release sorts before
// its release, as in semver: 2.1.332-beta.1 is below 2.1.332.
func (r Range) Contains(v string) (bool, error) {
	got, err := ParseSemver(v)
	if err != nil {
		return false, err
	}
	if r.Min == "" {
		return false, nil
	}
	lo, err := ParseSemver(r.Min)
	if err != nil {
		return false, err
	}
	hi, err := ParseSemver(r.Max)
	if err != nil {
		return false, err
	}
	return got.Compare(lo) >= 0 && got.Compare(hi) <= 0, nil
}

// Semver is a parsed x.y.z[-pre] version (build metadata ignored).
type Semver struct {
	n   [3]int
	pre string
}

var semverRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$`)
})

// ParseSemver parses "1.2.3", "v1.2.3-beta.1+build".
func ParseSemver(s string) (Semver, error) {
	m := semverRe().FindStringSubmatch(s)
	if m == nil {
		return Semver{}, fmt.Errorf("%q is not a version like 1.2.3", s)
	}
	var v Semver
	for i := range v.n {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return Semver{}, fmt.Errorf("version %q: %w", s, err)
		}
		v.n[i] = n
	}
	v.pre = m[4]
	return v, nil
}

// MustSemver is ParseSemver for versions already validated.
func MustSemver(s string) Semver {
	v, err := ParseSemver(s)
	if err != nil {
		panic(err)
	}
	return v
}

// Compare orders a and b: -1, 0 or +1.
func (a Semver) Compare(b Semver) int {
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
