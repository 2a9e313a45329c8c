package result

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// JournalFormat names the journal's line format, written in its header:
// pVisor's trace journal, so readers written for it (which look at
// event.data.name and event.data.payload) read ours unchanged.
const JournalFormat = "pvisor.trace/5"

// traceVersion is the event schema version the header's format carries.
const traceVersion = 5

// JournalProducer is the producer every event names, as pVisor's replay.
const JournalProducer = "pvisor-replay"

// JournalFile is the journal's name in the state and output dirs.
const JournalFile = "replay-events.jsonl"

// Journal events.
const (
	EventRunStarted     = "run_started"
	EventPlanValidated  = "plan_validated"
	EventToolStarted    = "tool_started"
	EventToolFinished   = "tool_finished"
	EventSessionRebuilt = "session_rebuilt"
	EventRunFinished    = "run_finished"
	// The continuation of the agent CLI through the bridge.
	EventContinuationStarted  = "continuation_started"
	EventContinuationFinished = "continuation_finished"
	EventRunFailed            = "run_failed"
)

// Journal is the append-only, fsync'd record of what a run did, kept in the
// state dir. It is what makes a crashed run detectable: a tool that started
// and never finished may have changed the workspace halfway.
//
// Each line after the header is a pVisor trace Record: the event's position
// in this journal (a 0-based offset, contiguous) and the event, an
// observation fact of domain "replay" whose name and payload are the
// journal events below. Each writer is one trace; its events chain by
// caused_by.
type Journal struct {
	f     *os.File
	lock  *os.File
	path  string
	id    string // the journal's id, from its header
	trace string // this writer's trace id
	next  uint64 // offset of the next record
	cause string // id of the last event this writer appended
	now   func() time.Time
	// observe, when set, sees every appended event (progress lines).
	observe func(event string, data any)
}

// Record is one journal line.
type Record struct {
	Position Position `json:"position"`
	Event    Event    `json:"event"`
}

// Position is where a record sits in its journal.
type Position struct {
	Journal string `json:"journal"`
	Offset  uint64 `json:"offset"`
}

// Event is a pVisor trace event; the journal writes only observations.
type Event struct {
	Version          int      `json:"version"`
	ID               string   `json:"id"`
	TraceID          string   `json:"trace_id"`
	Producer         string   `json:"producer"`
	ObservedAtUnixMS int64    `json:"observed_at_unix_ms"`
	Scope            []string `json:"scope"`
	Context          *string  `json:"context"`
	Operation        *string  `json:"operation"`
	CausedBy         []string `json:"caused_by"`
	Level            string   `json:"level"`
	Granularity      string   `json:"granularity"`
	Data             Fact     `json:"data"`
}

// Fact is an observation fact: a named, versioned payload of a domain.
type Fact struct {
	Fact    string          `json:"fact"`
	Domain  string          `json:"domain"`
	Name    string          `json:"name"`
	Version int             `json:"version"`
	Payload json.RawMessage `json:"payload"`
}

// Name is the record's journal event name ("" for a fact of another
// domain, which the journal never writes).
func (r *Record) Name() string {
	if r.Event.Data.Fact != "observation" || r.Event.Data.Domain != "replay" {
		return ""
	}
	return r.Event.Data.Name
}

type header struct {
	Format  string `json:"format"`
	Journal string `json:"journal"`
}

// AmbiguousError reports tool calls that started in an earlier run and have
// no finish record: their effect on the workspace is unknown.
type AmbiguousError struct {
	Calls []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("state dir holds tool call(s) %v that started in an earlier run and never finished; their effect on the workspace is unknown (use a fresh sandbox and a new --run-id or --state-dir)", e.Calls)
}

// OpenJournal opens (creating if needed) the journal in stateDir, takes an
// exclusive lock on the state dir, repairs a torn final record and refuses a
// journal that holds an unfinished tool call.
func OpenJournal(stateDir string) (*Journal, error) {
	lock, err := os.OpenFile(filepath.Join(stateDir, "run.lock"), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("state dir %s is in use by another pvisor run", stateDir)
	}
	j := &Journal{lock: lock, path: filepath.Join(stateDir, JournalFile), now: time.Now, trace: newID()}
	if err := j.open(); err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

func (j *Journal) open() error {
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	j.f = f
	id, recs, good, err := readRecords(f)
	if err != nil {
		return err
	}
	j.id = id
	if err := f.Truncate(good); err != nil {
		return err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		return err
	}
	if good == 0 {
		j.id = newID()
		line, _ := json.Marshal(header{Format: JournalFormat, Journal: j.id})
		if _, err := f.Write(append(line, '\n')); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
	}
	j.next = uint64(len(recs))
	if calls := Unfinished(recs); len(calls) > 0 {
		return &AmbiguousError{Calls: calls}
	}
	return nil
}

// ReadJournal reads a journal (or its copy in the output dir).
func ReadJournal(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	_, recs, _, err := readRecords(f)
	return recs, err
}

// readRecords reads the journal and returns its id, its records and the
// length of its intact part: a final line without a newline is a write the
// crash cut.
func readRecords(r io.Reader) (string, []Record, int64, error) {
	br := bufio.NewReader(r)
	var recs []Record
	var good int64
	var id string
	first := true
	for {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return id, recs, good, nil // an unterminated tail is dropped
		}
		if err != nil {
			return "", nil, 0, err
		}
		body := bytes.TrimSpace(line)
		if first {
			var h header
			if json.Unmarshal(body, &h) != nil || h.Format != JournalFormat || h.Journal == "" {
				return "", nil, 0, fmt.Errorf("journal has an unknown header %.80q; it was not written by this pvisor (use a fresh --state-dir)", body)
			}
			id, first = h.Journal, false
		} else {
			var rec Record
			if err := json.Unmarshal(body, &rec); err != nil {
				return "", nil, 0, fmt.Errorf("journal record at byte %d is corrupt: %v (use a fresh --state-dir)", good, err)
			}
			if rec.Position.Journal != id || rec.Position.Offset != uint64(len(recs)) {
				return "", nil, 0, fmt.Errorf("journal record at byte %d is out of place (journal %q offset %d); use a fresh --state-dir", good, rec.Position.Journal, rec.Position.Offset)
			}
			recs = append(recs, rec)
		}
		good += int64(len(line))
	}
}

// Unfinished returns the call ids that have a tool_started record and no
// tool_finished record, sorted.
func Unfinished(recs []Record) []string {
	open := map[string]bool{}
	for _, r := range recs {
		name := r.Name()
		if name != EventToolStarted && name != EventToolFinished {
			continue
		}
		var d struct {
			CallID string `json:"call_id"`
		}
		_ = json.Unmarshal(r.Event.Data.Payload, &d)
		if name == EventToolStarted {
			open[d.CallID] = true
		} else {
			delete(open, d.CallID)
		}
	}
	out := make([]string, 0, len(open))
	for id := range open {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Append writes one event and fsyncs it before returning, so a crash right
// after a tool starts still leaves the tool_started record on disk.
func (j *Journal) Append(event string, data any) error {
	payload := []byte("{}")
	if data != nil {
		raw, err := json.Marshal(data)
		if err != nil {
			return err
		}
		if !bytes.Equal(raw, []byte("null")) {
			payload = raw
		}
	}
	ev := Event{Version: traceVersion, ID: newID(), TraceID: j.trace, Producer: JournalProducer,
		ObservedAtUnixMS: j.now().UnixMilli(), Scope: []string{"replay", j.trace}, CausedBy: []string{},
		Level: "info", Granularity: "operation",
		Data: Fact{Fact: "observation", Domain: "replay", Name: event, Version: 1, Payload: payload}}
	if j.cause != "" {
		ev.CausedBy = []string{j.cause}
	}
	line, err := json.Marshal(Record{Position: Position{Journal: j.id, Offset: j.next}, Event: ev})
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return err
	}
	j.next++
	j.cause = ev.ID
	if j.observe != nil {
		j.observe(event, data)
	}
	return nil
}

// Observe calls f after every record appended from now on (progress
// reporting); f must not block.
func (j *Journal) Observe(f func(event string, data any)) { j.observe = f }

// newID is a random (version 4) UUID.
func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	// Two per replayed call: hex by hand, not fmt's reflection.
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	hex.Encode(s[9:13], b[4:6])
	hex.Encode(s[14:18], b[6:8])
	hex.Encode(s[19:23], b[8:10])
	hex.Encode(s[24:36], b[10:16])
	s[8], s[13], s[18], s[23] = '-', '-', '-', '-'
	return string(s[:])
}

// Path is the journal file's path.
func (j *Journal) Path() string { return j.path }

// CopyTo copies the journal as it is now to dst.
func (j *Journal) CopyTo(dst string) error {
	data, err := os.ReadFile(j.path)
	if err != nil {
		return err
	}
	return WriteFile(dst, data)
}

// Close releases the journal and the state-dir lock.
func (j *Journal) Close() error {
	var err error
	if j.f != nil {
		err = j.f.Close()
	}
	if j.lock != nil {
		j.lock.Close()
	}
	return err
}
