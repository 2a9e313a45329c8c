// Package claude decodes Claude Code session files
// (~/.claude/projects/<project-key>/<session-id>.jsonl, CLI 1.0.x to 2.1.x).
//
// A session file is a tree of entries linked by uuid/parentUuid. The
// conversation is the chain from the last main-thread user/assistant entry
// back to a root; where a compact_boundary has parentUuid null the chain
// continues through its logicalParentUuid, so the pre-compaction history
// (whose side effects a replay needs) stays part of the trajectory.
// Sidechain (subagent) entries are never steps of the main trajectory.
//
// Claude Code writes one content block per assistant entry; the entries of
// one model response share message.id and become one Action. Tool results
// come back in user entries, one tool_result each, in completion order, and
// are paired by tool_use_id. An Observation's Content is the tool_result's
// string content, or the text blocks of a block array joined with "\n".
// Action.Text and Action.Reasoning join a response's text and thinking
// blocks with "\n". Assistant entries the CLI writes itself (model
// "<synthetic>", isApiErrorMessage) are not model responses and are left out,
// as are redacted_thinking and server-side tool blocks (server_tool_use and
// its results run inside the API, not in the client). Images in results have
// no text form and are dropped from Content.
//
// The format is also a trajectory.Replayer: exec.go re-runs Claude Code's
// built-in tools with the CLI's semantics and result texts (bash.go,
// files.go, edit.go, search.go, ls.go), and rebuild.go writes the session
// back with the fresh results in place of the recorded ones.
//
// Agent is Claude Code as the engine sees it: its launcher stages a rebuilt
// session and continues it with `claude --resume --print` (launch.go),
// cleans the session the CLI wrote (collect.go), resumes and forks captured
// sessions (resume.go), and checks every request of the continuation on the
// bridge (envelope.go).
//
// Agent is Claude Code as the engine sees it: its launcher stages a rebuilt
// session and continues it with `claude --print --resume` (launch.go),
// cleans the session the CLI wrote (collect.go), resumes and forks captured
// sessions (resume.go), checks every request of the continuation on the
// bridge (envelope.go), and keeps the session store (session.go) and the
// doctor's recording (doctor.go).
package claude

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// Format is the Claude Code session format.
type Format struct{}

// New returns the Claude Code format.
func New() *Format { return &Format{} }

var _ trajectory.Format = (*Format)(nil)

// Agent implements trajectory.Format.
func (*Format) Agent() string { return AgentName }

// PrefixExt implements trajectory.Format.
func (*Format) PrefixExt() string { return "jsonl" }

// Detect reports whether head holds Claude Code entries: at least one line
// with Claude's own keys (uuid with parentUuid or sessionId, a summary's
// leafUuid, a file-history snapshot) and no Codex-style payload envelope.
// OpenCode and Pi use other keys (sessionID, id/parentId) and do not match.
func (*Format) Detect(head []byte) bool {
	found := false
	for len(head) > 0 {
		var line []byte
		i := bytes.IndexByte(head, '\n')
		if i < 0 {
			line, head = head, nil
		} else {
			line, head = head[:i], head[i+1:]
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' || !gjson.ValidBytes(line) {
			if i < 0 {
				// The head was cut inside this line. Claude Code writes
				// every transcript entry with parentUuid as its first key
				// (its own loader relies on that prefix).
				return found || bytes.HasPrefix(line, []byte(`{"parentUuid":`))
			}
			return false
		}
		v := gjson.ParseBytes(line)
		if v.Get("payload").Exists() {
			return false
		}
		typ := v.Get("type")
		if typ.Type != gjson.String {
			return false
		}
		switch {
		case v.Get("uuid").Type == gjson.String &&
			(v.Get("parentUuid").Exists() || v.Get("sessionId").Type == gjson.String):
			found = true
		case typ.Str == "summary" && v.Get("leafUuid").Exists():
			found = true
		case typ.Str == "file-history-snapshot" && v.Get("snapshot").Exists():
			found = true
		case v.Get("sessionId").Type == gjson.String && !v.Get("sessionID").Exists():
			found = true
		}
	}
	return found
}

// WritePrefix copies the original bytes up to the end of the last record of
// step afterStep (its last tool_result in practice). Claude Code rebuilds
// the conversation from the newest leaf, so a byte prefix of the file is
// exactly the session as it was when that step's results came back.
func (*Format) WritePrefix(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int) error {
	end, err := prefixEnd(t, afterStep, size)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, io.NewSectionReader(src, 0, end)); err != nil {
		return err
	}
	// A final line without newline would be glued to the next entry the
	// agent appends.
	var last [1]byte
	if end > 0 {
		if _, err := src.ReadAt(last[:], end-1); err != nil {
			return err
		}
		if last[0] != '\n' {
			_, err := w.Write([]byte{'\n'})
			return err
		}
	}
	return nil
}

// prefixEnd is the byte offset just past the last record of step
// afterStep (its last tool_result in practice).
func prefixEnd(t *trajectory.Trajectory, afterStep int, size int64) (int64, error) {
	if err := trajectory.CheckBoundary(t, afterStep); err != nil {
		return 0, err
	}
	idx := t.ActionIndex(afterStep)
	a := &t.Actions[idx]
	end := a.Locator.EndByte
	for _, c := range a.Calls {
		end = max(end, c.Observation.Locator.EndByte)
	}
	for i := idx + 1; i < len(t.Actions); i++ {
		if l := t.Actions[i].Locator; l.StartByte < end {
			return 0, &trajectory.Error{Kind: trajectory.Unsupported, Line: l.First,
				Msg: fmt.Sprintf("step %d ends at byte %d but the next response starts earlier (%s): the file cannot be cut after this step",
					afterStep, end, l)}
		}
	}
	if end > size {
		return 0, fmt.Errorf("claude: step %d ends at byte %d, past the end of the %d-byte file: was it changed since it was decoded?", afterStep, end, size)
	}
	return end, nil
}

// PrefixModelTurns counts the model responses up to and including the
// boundary step's response, text-only responses included.
func (*Format) PrefixModelTurns(t *trajectory.Trajectory, afterStep int) int {
	return t.ActionIndex(afterStep) + 1
}

// ProjectKey is the name of the directory under ~/.claude/projects that
// Claude Code uses for sessions started in cwd: every UTF-16 code unit
// outside [A-Za-z0-9] becomes '-' (so a character outside the BMP gives
// two). A key longer than 200 characters is cut to 200 and followed by '-'
// and the base-36 absolute value of a 32-bit string hash (h = h*31 + unit)
// of cwd, as the Node.js build of the CLI computes it. Builds running
// under Bun use Bun.hash for that suffix instead (Claude Code's SDK looks
// such directories up by their 200-character prefix for that reason), so a
// launcher should prefer an existing directory with the same prefix.
func ProjectKey(cwd string) string {
	units := utf16.Encode([]rune(cwd))
	key := make([]byte, len(units))
	var h int32
	for i, u := range units {
		h = h*31 + int32(u)
		if u < 128 && isAlnum(byte(u)) {
			key[i] = byte(u)
		} else {
			key[i] = '-'
		}
	}
	if len(key) <= maxKey {
		return string(key)
	}
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	return string(key[:maxKey]) + "-" + strconv.FormatInt(abs, 36)
}

const maxKey = 200

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
