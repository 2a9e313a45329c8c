package pi

import "github.com/pvisor/pvisor/trajectory/internal/linediff"

// unifiedPatch is the standard unified patch pi (≥ 0.75.5) puts in an edit
// result's details.patch: the "diff" npm package's structured patch of the
// whole file with 4 lines of context, printed with file headers only
// ("--- path", "+++ path", no Index line). (1.x diffs windows around each
// replacement and joins their hunks, which equals this except where runs
// of repeated lines could align differently.)
func unifiedPatch(path, oldText, newText string) string {
	return linediff.FormatPatch(path, linediff.Hunks(oldText, newText, 4), false)
}
