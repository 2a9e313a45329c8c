package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/result"
)

// A prefix too large to keep between planning and writing (over 1 MiB) is made again
// from the source once the output dir exists: the file and the hash the
// journal records are those of the prefix kept in memory.
func TestLargePrefixWrittenFromSource(t *testing.T) {
	src := "../testdata/trajectories/claude-code/agentcmd_full-session-four.jsonl"
	prepare := func(limit int) (prefix []byte, journal string) {
		t.Helper()
		defer func(old int) { prefixInMemory = old }(prefixInMemory)
		prefixInMemory = limit
		dir := t.TempDir()
		res := Run(context.Background(), &Request{Agent: "claude-code", Trajectory: src, AfterStep: 3, Mode: PrepareOnly,
			AllowStaleObservations: true, RunID: "p", StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out")})
		if res.Failure != nil {
			t.Fatalf("limit %d: %+v", limit, res.Failure)
		}
		prefix, err := os.ReadFile(filepath.Join(dir, "out", "p", "native", "prepared-prefix.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		j, _ := os.ReadFile(filepath.Join(dir, "state", "p", result.JournalFile))
		return prefix, string(j)
	}
	kept, _ := prepare(8 << 20)
	streamed, journal := prepare(64)
	if len(kept) <= 64 {
		t.Fatalf("the prefix is %d bytes, not over the 64-byte limit: the case tests nothing", len(kept))
	}
	if !bytes.Equal(kept, streamed) {
		t.Fatalf("streamed prefix (%d bytes) differs from the kept one (%d bytes)", len(streamed), len(kept))
	}
	sum := sha256.Sum256(kept)
	if !strings.Contains(journal, `"prepared_only":true,"sha256":"`+hex.EncodeToString(sum[:])) {
		t.Errorf("the journal's session_rebuilt does not carry the prefix's sha256 %x", sum)
	}
}

// A source whose bytes change between the two passes (same size and
// modification time, so the plan's own check cannot see it) fails the
// run, and no prefix file is left.
func TestLargePrefixChangedBetweenPasses(t *testing.T) {
	defer func(old int) { prefixInMemory = old }(prefixInMemory)
	prefixInMemory = 64
	dir := t.TempDir()
	data, err := os.ReadFile("../testdata/trajectories/claude-code/agentcmd_full-session-four.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "session.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	req := &Request{Agent: "claude-code", Trajectory: path, AfterStep: 3, Mode: PrepareOnly, AllowStaleObservations: true,
		RunID: "c", StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out")}
	r := &run{req: req, res: result.New(req.RunID, req.Agent)}
	p, err := BuildPlan(req)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r.plan = p
	if err := r.buildPrefix(); err != nil {
		t.Fatal(err)
	}
	if r.prefix != nil {
		t.Fatal("the prefix was kept in memory: the case tests nothing")
	}
	st, _ := os.Stat(path)
	changed := bytes.Replace(data, []byte(`"type":"user"`), []byte(`"type":"User"`), 1)
	if bytes.Equal(changed, data) {
		t.Fatal("nothing to change in the sample")
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(changed, 0)
	f.Close()
	os.Chtimes(path, time.Time{}, st.ModTime())
	if err := r.allocate(); err != nil {
		t.Fatal(err)
	}
	err = r.writePlan()
	if err == nil || !strings.Contains(err.Error(), "came out different the second time") {
		t.Fatalf("writePlan: %v, want the prefix refused", err)
	}
	if f, ok := err.(*Failure); !ok || f.Category != result.TrajectoryError {
		t.Errorf("writePlan: %#v, want a trajectory_error (the file's fault, not the output dir's)", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "out", "c", "native")); len(ents) != 0 {
		t.Errorf("left in native/: %v", ents)
	}
}
