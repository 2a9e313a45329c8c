//go:build e2e

package e2e

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/capture"
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

	bundles := t.TempDir()
	line, code, stderr := pvisorRun(t, pvisor, nil, "capture", "--agent", "kimi", "--session", m.SessionID, "--home", home, "--store", bundles)
	if code != 0 {
		t.Fatalf("capture: %d %s\n%s", code, line.Raw, stderr)
	}
	bundle := line.Get("bundle").Str
	if n := len(line.Get("manifest.files").Array()); n != 2 {
		t.Errorf("the bundle holds %d files, want the wire log and state.json (not the log): %s", n, line.Get("manifest.files").Raw)
	}
	parentHash, err := capture.Hash(bundle)
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--agent", "kimi", "--bundle", bundle, "--upstream", "openai-chat", "--agent-entrypoint", bin,
		"--state-dir", filepath.Join(t.TempDir(), "state"), "--output-dir", filepath.Join(t.TempDir(), "out"), "--idle-timeout", "2m"}
	script := func(replies ...fakemodel.Reply) fakemodel.Script {
		s := m.Script
		s.Replies = replies
		s.Final = "unexpected extra turn"
		return s
	}
	const next = "Now list what you changed, in one line."

	t.Run("resume", func(t *testing.T) {
		fake, env := fakeOnLoopback(t, script(fakemodel.Reply{Text: "README.md and NOTES.md. <promise>COMPLETE</promise>"}))
		ws, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		res, code, stderr := pvisorRun(t, pvisor, env, append([]string{"resume", "--workspace", ws, "--prompt", next, "--run-id", "r"}, base...)...)
		if code != 0 {
			t.Fatalf("resume: %d %s\n%s", code, res.Raw, stderr)
		}
		if id := res.Get("metadata.session.session_id").Str; id != m.SessionID {
			t.Errorf("resume continued %s, want %s", id, m.SessionID)
		}
		first := firstMain(t, fake)
		if first.Turn != len(m.Script.Replies) {
			t.Errorf("the first request after the resume holds %d assistant turns, want the recording's %d", first.Turn, len(m.Script.Replies))
		}
		for _, want := range []string{m.Prompt, next, "The current working directory is `" + ws + "`"} {
			if !bytes.Contains(first.Body, []byte(jsonString(want))) {
				t.Errorf("the first request after the resume lacks %q", want)
			}
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
		_, env := fakeOnLoopback(t, script(fakemodel.Reply{Text: "Forked. <promise>COMPLETE</promise>"}))
		res, code, stderr := pvisorRun(t, pvisor, env, append([]string{"fork", "--workspace", t.TempDir(), "--prompt", next, "--run-id", "f"}, base...)...)
		if code != 0 {
			t.Fatalf("fork: %d %s\n%s", code, res.Raw, stderr)
		}
		child := res.Get("metadata.session.session_id").Str
		if child == "" || child == m.SessionID || child != res.Get("metadata.session.fork_child").Str {
			t.Errorf("fork child id %q (parent %s, fork_child %s)", child, m.SessionID, res.Get("metadata.session.fork_child").Str)
		}
		if got := res.Get("metadata.session.fork_method").Str; got != "native" {
			t.Errorf("fork_method = %q", got)
		}
		if !res.Get("metadata.session.parent.unchanged").Bool() || !res.Get("metadata.session.parent.restored_copy_unchanged").Bool() {
			t.Errorf("parent = %s", res.Get("metadata.session.parent").Raw)
		}
		checkCaptured(t, res, child, "Forked.")
	})

	after, err := capture.Hash(bundle)
	if err != nil || len(after) != len(parentHash) {
		t.Fatalf("parent bundle after the runs: %v", err)
	}
	for k, v := range parentHash {
		if after[k] != v {
			t.Errorf("parent bundle file %s changed", k)
		}
	}
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
