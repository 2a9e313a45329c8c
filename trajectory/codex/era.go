package codex

import (
	"strconv"
	"strings"

	"github.com/pvisor/pvisor/trajectory"
)

// era is the generation of codex-rs whose result shapes a replay copies.
// The shapes that differ between CLI versions:
//
//   - apply_patch results: 0.40 (through `shell`) and 0.12x (freeform tool)
//     wrap them in the exec JSON {"output":…,"metadata":{"exit_code":…,
//     "duration_seconds":…}}; 0.171 writes "Exit code: 0\nWall time: 0
//     seconds\nOutput:\n…" (e2e recording, and codex 0.171 run by hand).
//   - verification failures: 0.40 "error: <err>", later "apply_patch
//     verification failed: <err>".
//   - unified exec truncation: 0.12x starts the truncated text with "Total
//     output lines: N\n\n" (codemie 0.125 lines 56-59); 0.171 adds a
//     "Warning: truncated output (original token count: T)\n" line first.
//   - `shell` output truncation: 0.40 keeps 128+128 lines in 10 KiB around
//     "[... omitted N of M lines ...]"; later the token budget.
//
// Where the switch happened between 0.128 and 0.171 is not known; eraFor
// places it at 0.150.
type era int

const (
	eraUnknown era = iota
	eraLegacy      // ≤ 0.45: `shell` argv tool, JSON-wrapped outputs
	eraMiddle      // 0.46-0.149: unified exec, JSON-wrapped apply_patch
	eraCurrent     // ≥ 0.150
)

// eraFor maps a cli_version ("0.125.0", "0.128.0-alpha.1") to an era.
func eraFor(version string) era {
	v := strings.TrimPrefix(strings.TrimSpace(version), "v")
	major, rest, ok := strings.Cut(v, ".")
	if !ok {
		return eraUnknown
	}
	minorStr, _, _ := strings.Cut(rest, ".")
	minorStr, _, _ = strings.Cut(minorStr, "-")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minorStr)
	switch {
	case err1 != nil || err2 != nil:
		return eraUnknown
	case ma > 0 || mi >= 150:
		return eraCurrent
	case mi >= 46:
		return eraMiddle
	}
	return eraLegacy
}

// shapes is what a tool session knows about the shapes to write: from the
// CLI version when the caller gave one, else learnt from the recorded
// results of the calls it replays (a recorded result shows the shape its
// CLI wrote), else the newest CLI's.
type shapes struct {
	era        era
	patchJSON  *bool // apply_patch results wrapped in the exec JSON
	warnHeader *bool // unified exec truncation has the Warning line
	legacyCut  *bool // `shell` output truncated by lines (0.40)
}

func ptr(b bool) *bool { return &b }

// learn records what the recorded result of c reveals.
func (s *shapes) learn(c *trajectory.ToolCall) {
	if c.Observation == nil {
		return
	}
	o := c.Observation.Content
	switch c.Name {
	case ToolApplyPatch:
		switch {
		case strings.HasPrefix(o, `{"output":`):
			s.patchJSON = ptr(true)
		case strings.HasPrefix(o, "Exit code: "):
			s.patchJSON = ptr(false)
		}
	case ToolExecCommand, ToolWriteStdin:
		switch {
		case strings.Contains(o, "\nOutput:\nWarning: truncated output"):
			s.warnHeader = ptr(true)
		case strings.Contains(o, "\nOutput:\nTotal output lines: "):
			s.warnHeader = ptr(false)
		}
	case ToolShell, ToolContainerExec, ToolLocalShellCall:
		switch {
		case strings.Contains(o, `\n[... omitted `):
			s.legacyCut = ptr(true)
		case strings.Contains(o, " tokens truncated…"):
			s.legacyCut = ptr(false)
		}
	}
}

func (s *shapes) pick(learnt *bool, byEra func(era) bool, def bool) bool {
	if learnt != nil {
		return *learnt
	}
	if s.era != eraUnknown {
		return byEra(s.era)
	}
	return def
}

// patchWrapped reports whether apply_patch results are JSON-wrapped.
func (s *shapes) patchWrapped() bool {
	return s.pick(s.patchJSON, func(e era) bool { return e != eraCurrent }, false)
}

// execHeader is the unified exec truncation header.
func (s *shapes) execHeader() truncHeader {
	if s.pick(s.warnHeader, func(e era) bool { return e == eraCurrent }, true) {
		return headerWarning
	}
	return headerLines
}

// shellLegacy reports whether `shell` outputs use 0.40's line truncation.
// Without evidence the argv `shell` tool is taken to be the 0.40 one.
func (s *shapes) shellLegacy() bool {
	return s.pick(s.legacyCut, func(e era) bool { return e == eraLegacy }, true)
}

// patchErrPrefix starts an apply_patch verification failure: 0.40's
// "error: " (its apply_patch ran only through the argv `shell` tool, so a
// session of unknown version that patches through `shell` is taken to be
// 0.40), later "apply_patch verification failed: ".
func (s *shapes) patchErrPrefix(viaShell bool) string {
	if s.era == eraLegacy || (s.era == eraUnknown && viaShell) {
		return "error: "
	}
	return "apply_patch verification failed: "
}
