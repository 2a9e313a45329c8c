package pi

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// semantics are the tool behaviours that changed between Pi releases, each
// pinned by the oracle files of the tested releases (testdata/oracle,
// regenerated from the real tools) and dated by Pi's changelog.
type semantics struct {
	// Release is the Pi release whose tools are reproduced; Source says
	// how it was chosen.
	Release, Source string

	trailingNewlineLine bool // < 0.75.5: "a\n" is two lines in truncation counts
	editPatch           bool // ≥ 0.75.5: edit details carry a unified patch
	fuzzyKeepsLines     bool // ≥ 0.79.9: a fuzzy edit rewrites only the lines it touches
	writeBytes          bool // < 0.85.0: "Successfully wrote N bytes to X"
	failedBashResult    bool // ≥ 0.99.0: a failed command is a result with isError and its details, not a thrown error
	grepContextFromRg   bool // ≥ 1.5.1: context lines come from ripgrep (none past a file's end)
	signalExitCode      bool // ≥ 1.6.0: a command killed by signal N exited with 128+N
}

// Release thresholds, from Pi's changelog.
var (
	relTrailingNewline = release{0, 75, 5}
	relFuzzyKeepsLines = release{0, 79, 9}
	relWriteNoBytes    = release{0, 85, 0}
	relSystemMessages  = release{0, 86, 0}
	relFailedBashValue = release{0, 99, 0}
	relGrepContextRg   = release{1, 5, 1}
	relSignalExitCode  = release{1, 6, 0}
)

// oracleReleases are the releases whose tools testdata/oracle pins (one
// tools@<release>.golden each), oldest first: a session that records no
// release is replayed as the newest of them its records allow.
var oracleReleases = []string{"0.73.1", "0.83.0", "1.6.0"}

// release is a Pi version's x.y.z (a pre-release counts as its release).
type release [3]int

func parseRelease(s string) (release, bool) {
	var r release
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return r, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return r, false
		}
		r[i] = n
	}
	return r, true
}

func (r release) atLeast(min release) bool {
	for i := range r {
		if r[i] != min[i] {
			return r[i] > min[i]
		}
	}
	return true
}

// Sources of the chosen release.
const (
	sourceRecorded   = "recorded" // the session records its release
	sourceContinuing = "continuing CLI"
	sourceSession    = "session generation" // what the session holds dates it
	sourceDefault    = "newest oracle release"
)

// semanticsOf is version's behaviour; an unparsable version is the newest
// known.
func semanticsOf(version, source string) semantics {
	v, ok := parseRelease(version)
	if !ok {
		return semanticsOf(oracleReleases[len(oracleReleases)-1], sourceDefault)
	}
	return semantics{Release: version, Source: source,
		trailingNewlineLine: !v.atLeast(relTrailingNewline),
		editPatch:           v.atLeast(relTrailingNewline),
		fuzzyKeepsLines:     v.atLeast(relFuzzyKeepsLines),
		writeBytes:          !v.atLeast(relWriteNoBytes),
		failedBashResult:    v.atLeast(relFailedBashValue),
		grepContextFromRg:   v.atLeast(relGrepContextRg),
		signalExitCode:      v.atLeast(relSignalExitCode),
	}
}

// chooseSemantics picks the release whose tools a replay reproduces, the
// one the agent itself would have run them with: the session's own when it
// records one; else the continuing CLI's when the session's records allow
// it (Pi writes no version, but shapes date it: trajectory MinVersion and
// BeforeVersion); else the newest oracle release they allow.
func chooseSemantics(recorded, continuing, minV, beforeV string) semantics {
	if recorded != "" {
		return semanticsOf(recorded, sourceRecorded)
	}
	var e evidence
	if v, ok := parseRelease(minV); ok {
		e.atLeast(v)
	}
	if v, ok := parseRelease(beforeV); ok {
		e.below(v)
	}
	if v, ok := parseRelease(continuing); ok && e.admits(v) {
		return semanticsOf(continuing, sourceContinuing)
	}
	if e == (evidence{}) {
		return semanticsOf(oracleReleases[len(oracleReleases)-1], sourceDefault)
	}
	for i := len(oracleReleases) - 1; i >= 0; i-- {
		if v, _ := parseRelease(oracleReleases[i]); e.admits(v) {
			return semanticsOf(oracleReleases[i], sourceSession)
		}
	}
	if e.min != (release{}) {
		return semanticsOf(e.min.String(), sourceSession) // newer than any oracle release
	}
	return semanticsOf(oracleReleases[len(oracleReleases)-1], sourceDefault)
}

// evidence is what records say of the release that wrote them: at least
// min (a shape that release introduced), before before (a shape it
// removed). Pi records no version in its files, so this dates a session.
type evidence struct {
	min, before release // zero: no bound
}

func (e *evidence) atLeast(r release) {
	if r.atLeast(e.min) {
		e.min = r
	}
}

func (e *evidence) below(r release) {
	if e.before == (release{}) || !r.atLeast(e.before) {
		e.before = r
	}
}

func (e *evidence) merge(o evidence) {
	if o.min != (release{}) {
		e.atLeast(o.min)
	}
	if o.before != (release{}) {
		e.below(o.before)
	}
}

// consistent: some release satisfies both bounds (a session resumed by
// releases of different generations may show both shapes).
func (e evidence) consistent() bool {
	return e.before == (release{}) || !e.min.atLeast(e.before)
}

func (e evidence) admits(r release) bool {
	return r.atLeast(e.min) && (e.before == (release{}) || !r.atLeast(e.before))
}

// resultEvidence dates one tool result by the shapes that changed: an
// edit's details carry a unified patch since 0.75.5, and write confirmed
// "N bytes" before 0.85.0.
func resultEvidence(tool string, content, details gjson.Result, isError bool) evidence {
	var e evidence
	if isError {
		return e
	}
	switch tool {
	case "edit":
		if details.IsObject() && details.Get("diff").Exists() {
			if details.Get("patch").Exists() {
				e.atLeast(relTrailingNewline)
			} else {
				e.below(relTrailingNewline)
			}
		}
	case "write":
		text := content.Str
		if content.IsArray() {
			text = content.Get("0.text").Str
		}
		switch {
		case writeBytesRe().MatchString(text):
			e.below(relWriteNoBytes)
		case strings.HasPrefix(text, "Successfully wrote to "):
			e.atLeast(relWriteNoBytes)
		}
	}
	return e
}

// bounds are the evidence as Trajectory.MinVersion and BeforeVersion.
func (e evidence) bounds() (min, before string) {
	if e.min != (release{}) {
		min = e.min.String()
	}
	if e.before != (release{}) {
		before = e.before.String()
	}
	return min, before
}

func (r release) String() string {
	return strconv.Itoa(r[0]) + "." + strconv.Itoa(r[1]) + "." + strconv.Itoa(r[2])
}
