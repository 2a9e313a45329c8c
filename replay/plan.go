package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/run/userfile"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/agents"
)

// ManifestSchema is manifest.json's schema_version.
const ManifestSchema = "sandbox-replay.plan/v1"

// Plan is what prepare learns from the trajectory; manifest.json is its
// serialisation. Observations are deliberately absent: the plan is what will
// be re-run, not what was seen.
type Plan struct {
	Format     trajectory.Format `json:"-"`
	Trajectory *trajectory.Trajectory
	SourceSize int64 `json:"-"`
	// source is the trajectory opened once by BuildPlan: every later phase
	// reads these bytes, so swapping the file mid-run changes nothing, and
	// changing it in place is noticed (see Source).
	source     *os.File
	sourceInfo fs.FileInfo
	Manifest   Manifest
	// Stale are prefix calls that will reuse their original observation.
	Stale []trajectory.StaleCall
}

// Manifest is manifest.json.
type Manifest struct {
	SchemaVersion string          `json:"schema_version"`
	Agent         ManifestAgent   `json:"agent"`
	Source        ManifestSource  `json:"source"`
	Boundary      Boundary        `json:"boundary"`
	Batches       []ManifestBatch `json:"batches"`
}

// ManifestAgent names the agent, the version recorded in the file (null
// when the file records none) and the profile the plan was read with.
type ManifestAgent struct {
	Name    string  `json:"name"`
	Version *string `json:"version"`
	// Profile names how the trajectory was read: the agent as pVisor
	// names it and the native sub-format, e.g. "claude-code/session-jsonl".
	Profile string `json:"profile"`
}

// ManifestSource identifies the exact input bytes. Path is canonical
// (absolute, symbolic links of its directories resolved), as pVisor writes it.
type ManifestSource struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Boundary is where the replay stops and the agent takes over.
type Boundary struct {
	AfterStep         int  `json:"after_step"`
	CompleteToolBatch bool `json:"complete_tool_batch"`
	PrefixModelTurns  int  `json:"prefix_model_turns"`
	ToolCalls         int  `json:"tool_calls"`
}

// ManifestBatch is one step of the prefix. NativeLocator is pVisor's
// string, the 0-based range of the file's records ("events:10-17");
// NativePosition says the same in our words ("lines 11-18"), and Locator
// is ours, structured, with the unit, the record range and the byte range.
type ManifestBatch struct {
	Ordinal        int                `json:"ordinal"`
	NativeLocator  string             `json:"native_locator"`
	NativePosition string             `json:"native_position"`
	Locator        trajectory.Locator `json:"locator"`
	ToolCalls      []ManifestCall     `json:"tool_calls"`
}

// ManifestCall is one call to re-run.
type ManifestCall struct {
	Ordinal   int             `json:"ordinal"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// OpenTrajectory checks that path is a regular file and not a link, so what
// is hashed is what is decoded, and returns it open.
func OpenTrajectory(path string) (*os.File, int64, error) {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// A configuration error, as pVisor classifies it: the request
		// names a file that is not there (exit 2).
		return nil, 0, fail(result.ConfigurationError, "trajectory does not exist: %s", path)
	case err != nil:
		return nil, 0, fail(result.TrajectoryError, "trajectory %s: %v", path, err)
	case st.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(path)
		return nil, 0, fail(result.TrajectoryError, "trajectory %s is a symbolic link (to %s); pass the file itself so the bytes hashed are the bytes replayed", path, target)
	case st.IsDir():
		// Configuration errors, as pVisor's "trajectory does not exist"
		// for anything but a file.
		return nil, 0, fail(result.ConfigurationError, "trajectory %s is a directory; pass the session file inside it", path)
	case !st.Mode().IsRegular():
		return nil, 0, fail(result.ConfigurationError, "trajectory %s is not a regular file", path)
	}
	// Checked again on the open file: what was swapped in since the Lstat
	// (a FIFO, a symlink) is refused, never waited on.
	f, st, err := userfile.Open(path, userfile.Policy{What: "trajectory"})
	if err != nil {
		return nil, 0, fail(result.TrajectoryError, "%v", err)
	}
	return f, st.Size(), nil
}

// BuildPlan decodes the trajectory with the named agent's format, checks the
// boundary and the prefix tools, and builds the manifest.
func BuildPlan(req *Request) (*Plan, error) {
	// Only a replay compares observations; a plan needs just their shape.
	opts := trajectory.Options{SkipObservationContent: req.Mode == PrepareOnly, Instance: req.Instance}
	format, ok := lookupFormat(req.Agent)
	if !ok {
		return nil, fail(result.ConfigurationError, "unknown agent %q (supported: %s)%s", req.Agent, strings.Join(agentNames(), ", "), agents.DidYouMean(req.Agent))
	}
	f, size, err := OpenTrajectory(req.Trajectory)
	if err != nil {
		return nil, err
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	if size == 0 {
		return nil, fail(result.TrajectoryError, "trajectory %s is empty", req.Trajectory)
	}
	head, err := agents.Head(f)
	if err != nil {
		return nil, fail(result.TrajectoryError, "trajectory %s: %v", req.Trajectory, err)
	}
	if !format.Detect(head) {
		if m := agents.Matching(head); len(m) > 0 {
			return nil, fail(result.TrajectoryError, "trajectory %s looks like a %s session, not %s (pass --agent %s)", req.Trajectory, strings.Join(m, "/"), req.Agent, m[0])
		}
	}
	// One pass: the decoder reads through a hashing tee; whatever it did not
	// read (it stops at a torn tail or an error) is hashed afterwards.
	hr := newHashingReader(io.NewSectionReader(f, 0, size))
	defer hr.stop()
	var t *trajectory.Trajectory
	if req.Mode == PrepareOnly {
		// Nothing after the boundary is needed: memory stays flat in the
		// file's size for formats that can leave it out.
		t, err = trajectory.DecodePrefix(format, hr, f, opts, req.AfterStep)
	} else {
		t, err = format.Decode(hr, opts)
	}
	if err != nil {
		return nil, decodeFailure(req.Trajectory, err)
	}
	digest, err := hr.finish(io.NewSectionReader(f, hr.n, size-hr.n))
	if err != nil {
		return nil, fail(result.TrajectoryError, "trajectory %s: %v", req.Trajectory, err)
	}
	sum := hex.EncodeToString(digest)
	if err := trajectory.CheckBoundary(t, req.AfterStep); err != nil {
		return nil, decodeFailure(req.Trajectory, err)
	}
	if rr, ok := format.(trajectory.RunRefuser); ok && req.Mode != PrepareOnly {
		if err := rr.RefuseRun(t, req.Mode == Continue); err != nil {
			return nil, fail(result.UnsupportedAgent, "%v", err)
		}
	}
	if rc, ok := format.(trajectory.RebuildChecker); ok && req.Mode != PrepareOnly {
		if err := rc.CheckRebuild(t); err != nil {
			return nil, decodeFailure(req.Trajectory, err)
		}
	}
	st, err := f.Stat()
	if err != nil {
		return nil, fail(result.TrajectoryError, "trajectory %s: %v", req.Trajectory, err)
	}
	p := &Plan{Format: format, Trajectory: t, SourceSize: size, source: f, sourceInfo: st}
	p.Stale = trajectory.CheckPrefixTools(format, t, req.AfterStep)
	if len(p.Stale) > 0 && !req.AllowStaleObservations {
		s := p.Stale[0]
		more := ""
		if len(p.Stale) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(p.Stale)-1)
		}
		if s.EndsEpisode {
			return nil, fail(result.UnsupportedAgent, "%v%s, so no replay can go past it; choose an earlier --after-step (at most %d)", s, more, s.Step-1)
		}
		return nil, fail(result.UnsupportedAgent, "%v%s; choose an earlier --after-step, or pass --allow-stale-observations to reuse the recorded observation (quality becomes degraded)", s, more)
	}
	m := Manifest{
		SchemaVersion: ManifestSchema,
		Agent:         ManifestAgent{Name: format.Agent(), Version: optional(t.Version), Profile: Profile(format.Agent(), t.Format)},
		Source:        ManifestSource{Path: canonicalPath(req.Trajectory), SHA256: sum},
		Boundary: Boundary{AfterStep: req.AfterStep, CompleteToolBatch: true,
			PrefixModelTurns: format.PrefixModelTurns(t, req.AfterStep)},
		Batches: []ManifestBatch{},
	}
	var locs []string
	if pl, ok := format.(trajectory.PvisorLocated); ok {
		if locs, err = pl.PvisorLocators(io.NewSectionReader(f, 0, size), size, t, req.AfterStep); err != nil {
			return nil, decodeFailure(req.Trajectory, err)
		}
	}
	for i, a := range t.Steps() {
		if a.Step > req.AfterStep {
			break
		}
		b := ManifestBatch{Ordinal: a.Step, NativeLocator: pvisorLocator(a.Locator), NativePosition: a.Locator.String(), Locator: a.Locator}
		if i < len(locs) {
			b.NativeLocator = locs[i]
		}
		for i, c := range a.Calls {
			b.ToolCalls = append(b.ToolCalls, ManifestCall{Ordinal: i + 1, CallID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		m.Boundary.ToolCalls += len(a.Calls)
		m.Batches = append(m.Batches, b)
	}
	p.Manifest = m
	keep = true
	return p, nil
}

// Profile names how a trajectory of agent in sub-format was read.
func Profile(agent, subFormat string) string {
	label := agent
	if a, ok := agents.Get(agent); ok && a.Native.Label != "" {
		label = a.Native.Label
	}
	if subFormat == "" {
		return label
	}
	return label + "/" + subFormat
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// canonicalPath is path made absolute with the symbolic links of its
// directories resolved (the file itself is never a link: OpenTrajectory
// refuses those). On an error the absolute path is the best there is.
func canonicalPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// Source returns the trajectory BuildPlan decoded and hashed, from the same
// open file. A file changed in place since then is a trajectory error: the
// manifest's hash would not describe what is replayed.
func (p *Plan) Source() (io.ReaderAt, error) {
	if p.source == nil {
		return nil, fail(result.InternalError, "the plan's trajectory is closed")
	}
	st, err := p.source.Stat()
	if err != nil {
		return nil, fail(result.TrajectoryError, "trajectory %s: %v", p.Manifest.Source.Path, err)
	}
	if st.Size() != p.sourceInfo.Size() || !st.ModTime().Equal(p.sourceInfo.ModTime()) {
		return nil, fail(result.TrajectoryError, "trajectory %s was changed during the run; leave it alone until pvisor ends (or replay a copy)", p.Manifest.Source.Path)
	}
	return io.NewSectionReader(p.source, 0, p.SourceSize), nil
}

// Close releases the trajectory file.
func (p *Plan) Close() {
	if p != nil && p.source != nil {
		p.source.Close()
		p.source = nil
	}
}

// hashingReader hashes what the decoder reads, in order, on another core:
// SHA-256 of a large file costs about as much as decoding it. Each read is
// copied into one of two buffers that the hasher goroutine owns until it has
// hashed it, so the decoder may reuse its own buffer at once.
type hashingReader struct {
	r    io.Reader
	h    hash.Hash
	n    int64
	work chan []byte
	free chan []byte
	done chan struct{}
	once sync.Once
}

func newHashingReader(r io.Reader) *hashingReader {
	hr := &hashingReader{r: r, h: sha256.New(), work: make(chan []byte, 2), free: make(chan []byte, 2), done: make(chan struct{})}
	hr.free <- nil
	hr.free <- nil
	go func() {
		defer close(hr.done)
		for b := range hr.work {
			hr.h.Write(b)
			hr.free <- b[:0]
		}
	}()
	return hr
}

func (hr *hashingReader) Read(p []byte) (int, error) {
	n, err := hr.r.Read(p)
	if n > 0 {
		hr.n += int64(n)
		hr.work <- append(<-hr.free, p[:n]...)
	}
	return n, err
}

// stop ends the hasher goroutine once everything handed to it is hashed.
func (hr *hashingReader) stop() {
	hr.once.Do(func() { close(hr.work) })
	<-hr.done
}

// finish hashes rest, what the decoder did not read (it stops at a torn tail
// or an error), and returns the digest of the whole file.
func (hr *hashingReader) finish(rest io.Reader) ([]byte, error) {
	hr.stop()
	if _, err := io.Copy(hr.h, rest); err != nil {
		return nil, err
	}
	return hr.h.Sum(nil), nil
}

func decodeFailure(path string, err error) error {
	var te *trajectory.Error
	if errors.As(err, &te) {
		cat := result.TrajectoryError
		if te.Kind == trajectory.Unsupported {
			cat = result.UnsupportedVersion
		}
		return fail(cat, "trajectory %s: %v", path, err)
	}
	return fail(result.TrajectoryError, "trajectory %s: %v", path, err)
}

// lookupFormat and agentNames are variables so engine tests can add a
// format of their own next to the real ones.
var (
	lookupFormat = agents.Lookup
	agentNames   = agents.Names
)

// pvisorLocator is a step's native_locator as pVisor writes it for Codex
// and OpenCode (formats with another form implement
// trajectory.PvisorLocated): "events:" and the 0-based, inclusive range of
// the records it spans. Our lines are numbered from 1; array events,
// messages and entries from 0.
func pvisorLocator(l trajectory.Locator) string {
	first, last := l.First, l.Last
	if l.Unit == "line" {
		first, last = first-1, last-1
	}
	return fmt.Sprintf("events:%d-%d", first, last)
}
