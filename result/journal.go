package result

import (
	"bufio"
	"bytes"
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

// JournalFormat names the journal's line format, written in its header.
const JournalFormat = "pvisor.journal/v1"

// JournalFile is the journal's name in the state and output dirs.
const JournalFile = "replay-events.jsonl"

// Journal events.
const (
	EventRunStarted      = "run_started"
	EventPlanValidated   = "plan_validated"
	EventToolStarted     = "tool_started"
	EventToolFinished    = "tool_finished"
	EventSessionPrepared = "session_prepared"
	EventSessionRebuilt  = "session_rebuilt"
	EventRunFinished     = "run_finished"
	EventRunFailed       = "run_failed"
)

// Journal is the append-only, fsync'd record of what a run did, kept in the
// state dir. It is what makes a crashed run detectable: a tool that started
// and never finished may have changed the workspace halfway.
type Journal struct {
	f    *os.File
	lock *os.File
	path string
	seq  int
	now  func() time.Time
}

// Record is one journal line.
type Record struct {
	Seq   int             `json:"seq"`
	Time  string          `json:"time"`
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data,omitempty"`
}

type header struct {
	Format string `json:"format"`
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
	j := &Journal{lock: lock, path: filepath.Join(stateDir, JournalFile), now: time.Now}
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
	recs, good, err := readRecords(f)
	if err != nil {
		return err
	}
	if err := f.Truncate(good); err != nil {
		return err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		return err
	}
	if good == 0 {
		line, _ := json.Marshal(header{Format: JournalFormat})
		if _, err := f.Write(append(line, '\n')); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if len(recs) > 0 {
		j.seq = recs[len(recs)-1].Seq
	}
	if calls := Unfinished(recs); len(calls) > 0 {
		return &AmbiguousError{Calls: calls}
	}
	return nil
}

// readRecords reads the journal and returns its records and the length of
// its intact part: a final line without a newline is a write the crash cut.
func readRecords(r io.Reader) ([]Record, int64, error) {
	br := bufio.NewReader(r)
	var recs []Record
	var good int64
	first := true
	for {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return recs, good, nil // an unterminated tail is dropped
		}
		if err != nil {
			return nil, 0, err
		}
		body := bytes.TrimSpace(line)
		if first {
			var h header
			if json.Unmarshal(body, &h) != nil || h.Format != JournalFormat {
				return nil, 0, fmt.Errorf("journal has an unknown header %.80q; it was not written by this pvisor (use a fresh --state-dir)", body)
			}
			first = false
		} else {
			var rec Record
			if err := json.Unmarshal(body, &rec); err != nil {
				return nil, 0, fmt.Errorf("journal record at byte %d is corrupt: %v (use a fresh --state-dir)", good, err)
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
		if r.Event != EventToolStarted && r.Event != EventToolFinished {
			continue
		}
		var d struct {
			CallID string `json:"call_id"`
		}
		_ = json.Unmarshal(r.Data, &d)
		if r.Event == EventToolStarted {
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
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	j.seq++
	rec := Record{Seq: j.seq, Time: j.now().UTC().Format(time.RFC3339Nano), Event: event, Data: raw}
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return j.f.Sync()
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
