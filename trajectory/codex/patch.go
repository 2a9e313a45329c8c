package codex

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run/patch"
	"github.com/pvisor/pvisor/trajectory"
)

// apply_patch, applied by the session as Codex applies it itself: the
// freeform tool (input = patch text), its older function form {"input"},
// and patches the model ran through a shell tool (`apply_patch <<'EOF'`
// heredocs or ["apply_patch", PATCH]), which Codex intercepts.
//
// Codex verifies the whole patch against the files before writing any of
// them, so a patch that fails verification changes nothing (codex 0.171:
// an Add followed by a failing Update leaves no new file); run/patch's
// all-or-nothing mode is that behaviour. Its texts, from codex 0.171:
//
//	Success. Updated the following files:\nA path\nM path\nD path\n
//	apply_patch verification failed: Failed to find expected lines in /abs/file:\n<lines>
//	apply_patch verification failed: Failed to find context '<ctx>' in /abs/file
//	apply_patch verification failed: Failed to read file to update /abs/file: No such file or directory (os error 2)
//	apply_patch verification failed: Failed to read /abs/file: No such file or directory (os error 2)   (Delete)
//	apply_patch verification failed: invalid patch: The first line of the patch must be '*** Begin Patch'
//	apply_patch verification failed: invalid hunk at line 2, '<line>' is not a valid hunk header. …
//	apply_patch verification failed: invalid patch: multiple operations target /abs/file
//	patch rejected: empty patch
//
// Summary paths are as written in the patch; error paths are absolute.

// patchOutcome is an applied or refused patch.
type patchOutcome struct {
	summary string // success text, "" on failure
	err     string // failure text without the era's prefix
	final   bool   // err is complete as is ("patch rejected: …")
	took    time.Duration
}

func (s *session) applyPatch(text, dir string) patchOutcome {
	start := time.Now()
	o := s.applyPatchText(text, dir)
	o.took = time.Since(start)
	return o
}

func (s *session) applyPatchText(text, dir string) patchOutcome {
	p, err := patch.Parse(s.mapText(text))
	if err != nil {
		return patchOutcome{err: err.Error()}
	}
	current := s.shapes.era == eraCurrent || s.shapes.era == eraUnknown
	if len(p.Hunks) == 0 {
		if current {
			return patchOutcome{err: "patch rejected: empty patch", final: true}
		}
		return patchOutcome{err: "No files were modified."}
	}
	if current {
		seen := map[string]bool{}
		for _, h := range p.Hunks {
			for _, q := range []string{h.Path, h.MoveTo} {
				if q == "" {
					continue
				}
				abs := q
				if !filepath.IsAbs(abs) {
					abs = filepath.Join(dir, abs)
				}
				abs = filepath.Clean(abs)
				if seen[abs] {
					return patchOutcome{err: s.unmapText("invalid patch: multiple operations target " + abs)}
				}
				seen[abs] = true
			}
		}
	}
	res, err := patch.Apply(p, patch.Options{Dir: dir})
	var ae *patch.ApplyError
	switch {
	case errors.As(err, &ae):
		return patchOutcome{err: s.unmapText(applyErrorText(ae))}
	case err != nil:
		return patchOutcome{err: s.unmapText(err.Error())}
	}
	var b strings.Builder
	b.WriteString("Success. Updated the following files:\n")
	for _, group := range []struct {
		tag   string
		paths []string
	}{{"A", res.Added}, {"M", res.Modified}, {"D", res.Deleted}} {
		for _, p := range group.paths {
			fmt.Fprintf(&b, "%s %s\n", group.tag, s.unmapText(p))
		}
	}
	return patchOutcome{summary: b.String()}
}

// applyErrorText words an apply failure as Codex's verification does.
func applyErrorText(e *patch.ApplyError) string {
	switch e.Kind {
	case patch.ReadFailed:
		return fmt.Sprintf("Failed to read file to update %s: %s", e.Path, rustIOError(e.Err))
	case patch.DeleteFailed:
		return fmt.Sprintf("Failed to read %s: %s", e.Path, rustIOError(e.Err))
	}
	return e.Error()
}

// failure is the text of a refused patch in this era.
func (s *session) failure(o patchOutcome, viaShell bool) string {
	if o.final {
		return o.err
	}
	return s.shapes.patchErrPrefix(viaShell) + o.err
}

// patchResult is the success text of the apply_patch tool itself: the
// exec JSON (0.12x) or the freeform exec text (0.171).
func (s *session) patchResult(o patchOutcome) string {
	if s.shapes.patchWrapped() {
		return execJSON(o.summary, 0, o.took)
	}
	return execText(o.summary, 0, o.took)
}

// applyPatchTool handles the apply_patch tool call.
func (s *session) applyPatchTool(call *trajectory.ToolCall) (trajectory.Fresh, error) {
	in := gjson.ParseBytes(call.Arguments)
	if in.IsObject() {
		in = in.Get("input")
	}
	o := s.applyPatch(in.String(), s.ws)
	if o.summary == "" {
		return trajectory.Fresh{Content: s.failure(o, false), Duration: o.took}, nil
	}
	return trajectory.Fresh{Content: s.patchResult(o), Duration: o.took}, nil
}

// patchViaExec answers an exec_command that only runs apply_patch: 0.171
// nests the tool's own text in a unified exec result without chunk id,
// exit line or token count ("Wall time: 0.0000 seconds\nOutput:\nExit
// code: 0\n…", codex 0.171 run by hand).
func (s *session) patchViaExec(text, dir string) trajectory.Fresh {
	o := s.applyPatch(text, dir)
	if o.summary == "" {
		return trajectory.Fresh{Content: s.failure(o, false), Duration: o.took}
	}
	return trajectory.Fresh{Content: "Wall time: 0.0000 seconds\nOutput:\n" + s.patchResult(o), Duration: o.took}
}

// patchViaShell answers a `shell` call that runs apply_patch: the exec
// JSON of the patch's output (0.40 corpus: "Success. Updated the following
// files:\nM apps/…\n" with exit_code 0).
func (s *session) patchViaShell(text, dir string) trajectory.Fresh {
	o := s.applyPatch(text, dir)
	if o.summary == "" {
		return trajectory.Fresh{Content: s.failure(o, true), Duration: o.took}
	}
	code := 0
	return trajectory.Fresh{Content: execJSON(o.summary, 0, o.took), ExitCode: &code, Duration: o.took}
}

// patchViaShellCommand answers a shell_command that runs apply_patch with
// the freeform exec text.
func (s *session) patchViaShellCommand(text, dir string) trajectory.Fresh {
	o := s.applyPatch(text, dir)
	if o.summary == "" {
		return trajectory.Fresh{Content: s.failure(o, false), Duration: o.took}
	}
	code := 0
	return trajectory.Fresh{Content: execText(o.summary, 0, o.took), ExitCode: &code, Duration: o.took}
}
