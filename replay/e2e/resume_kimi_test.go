//go:build e2e

package e2e

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/tested"
	kimifmt "github.com/pvisor/pvisor/trajectory/kimi"
	"github.com/pvisor/pvisor/trajectory/session/sessiontest"
)

// TestResumeForkKimi: the recorded Kimi Code session, laid out in a fresh
// HOME as the CLI wrote it (its state.json and a running CLI's log beside
// the wire log), is captured by id, resumed with the real CLI in a fresh
// home and another workspace (same id; the first request holds the whole
// conversation and names the new workspace, not the recorded one, in its
// system prompt), and forked with Kimi's own `kimi fork` (a new id; every
// file of the parent, in the source home and in the bundle, byte-identical).
func TestResumeForkKimi(t *testing.T) {
	pvisor := pvisorBinary(t)
	rels := tested.Of("kimi")
	bin := releaseBin(t, rels[len(rels)-1])
	dirs := recordingDirs(t, "kimi")
	dir := dirs[len(dirs)-1]
	m, err := readManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	enterLoopbackNetns(t)
	home, loc := sessiontest.Recorded(t, kimifmt.Sessions(), dir)
	sdir := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Join(loc.Root, loc.Main))))
	sessiontest.WriteFile(t, filepath.Join(sdir, "state.json"), []byte(`{"id":"`+m.SessionID+`","version":2,"cwd":"`+m.RepoPath+
		`","createdAt":1796195486852,"updatedAt":1796195488000,"archived":false,"agents":{"main":{"homedir":"`+
		filepath.Join(sdir, "agents", "main")+`","type":"main"}},"custom":{},"lastTurnReason":"completed","isCustomTitle":false}`))
	sessiontest.WriteFile(t, filepath.Join(sdir, "logs", "kimi-code.log"), []byte("a running CLI's log\n"))
	sourceBefore := treeSums(t, sdir)

	bundle, line, parentHash := captureSession(t, pvisor, "kimi", m.SessionID, home)
	if n := len(line.Get("manifest.files").Array()); n != 2 {
		t.Errorf("the bundle holds %d files, want the wire log and state.json (not the log): %s", n, line.Get("manifest.files").Raw)
	}
	base := bundleArgs(t, "kimi", bundle, "openai-chat", bin)

	t.Run("resume", func(t *testing.T) {
		fake, env := fakeOnLoopback(t, afterResume(m, fakemodel.Reply{Text: "README.md and NOTES.md. <promise>COMPLETE</promise>"}))
		ws, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		res := resumeSameSession(t, pvisor, env, fake, m, base, ws)
		first := firstMain(t, fake)
		if want := "The current working directory is `" + ws + "`"; !bytes.Contains(first.Body, []byte(jsonString(want))) {
			t.Errorf("the first request after the resume lacks %q", want)
		}
		if bytes.Contains(first.Body, []byte(m.RepoPath)) {
			t.Errorf("the first request after the resume still names the recorded cwd %s", m.RepoPath)
		}
		if rw := res.Get("metadata.session.rewritten"); len(rw.Array()) < 5 {
			t.Errorf("metadata.session.rewritten = %s", rw.Raw)
		}
		checkCaptured(t, res, m.SessionID, "README.md and NOTES.md.")
	})

	t.Run("fork", func(t *testing.T) {
		_, env := fakeOnLoopback(t, afterResume(m, fakemodel.Reply{Text: "Forked. <promise>COMPLETE</promise>"}))
		res := forkBundle(t, pvisor, env, m, base)
		if child := res.Get("metadata.session.session_id").Str; child != res.Get("metadata.session.fork_child").Str {
			t.Errorf("fork child id %q, fork_child %s", child, res.Get("metadata.session.fork_child").Str)
		}
		if got := res.Get("metadata.session.fork_method").Str; got != "native" {
			t.Errorf("fork_method = %q", got)
		}
		if !res.Get("metadata.session.parent.restored_copy_unchanged").Bool() {
			t.Errorf("parent = %s", res.Get("metadata.session.parent").Raw)
		}
	})

	checkBundleUnchanged(t, bundle, parentHash)
	sourceAfter := treeSums(t, sdir)
	if len(sourceAfter) != len(sourceBefore) {
		t.Errorf("the source session directory holds %d files, had %d", len(sourceAfter), len(sourceBefore))
	}
	for k, v := range sourceBefore {
		if sourceAfter[k] != v {
			t.Errorf("source session file %s changed", k)
		}
	}
}
