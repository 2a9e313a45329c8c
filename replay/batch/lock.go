package batch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A batch output dir is locked while a `batch run` uses it (issue 24 #5:
// two runs on one dir ran every run twice and removed each other's work).
// An unsharded run holds .batch/lock exclusively. Shards, which share one
// dir by design, each hold it shared plus their own .batch/lock-shard-I-of-N
// exclusively, and a shared .batch/lock-shards-N that keeps out shards of
// another count (whose shares overlap). The locks are flock(2) locks: the
// kernel releases them when the process ends, however it ends. Each lock
// file names its holder (pid, host, shard, start time) for the refusal.

// Lock is the set of locks one batch run holds on its output dir.
type Lock struct {
	files  []*os.File
	signed []*os.File // emptied on release, so no stale holder is shown
}

// Release drops the locks.
func (l *Lock) Release() {
	for _, f := range l.signed {
		_ = f.Truncate(0)
	}
	for _, f := range l.files {
		f.Close()
	}
	l.files, l.signed = nil, nil
}

// BusyError is the refusal: the output dir is in use.
type BusyError struct {
	Dir, Holder string
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("output dir %s is in use by another 'pvisor batch run' (%s): wait for it to end, or give this one another --output-dir", e.Dir, e.Holder)
}

type holder struct {
	PID     int    `json:"pid"`
	Host    string `json:"host"`
	Shard   string `json:"shard"`
	Started string `json:"started"`
}

// LockOutput takes the locks of a batch run of shard on dir.
func LockOutput(dir string, shard Shard) (*Lock, error) {
	meta := filepath.Join(dir, ".batch")
	if err := os.MkdirAll(meta, 0o755); err != nil {
		return nil, fmt.Errorf("output dir: %v", err)
	}
	l := &Lock{}
	fail := func(err error) (*Lock, error) { l.Release(); return nil, err }
	main := filepath.Join(meta, "lock")
	if shard.N <= 1 {
		f, err := take(main, unix.LOCK_EX)
		if err != nil {
			return fail(busy(dir, main, err))
		}
		l.files, l.signed = append(l.files, f), append(l.signed, f)
		return l, sign(f, shard)
	}
	f, err := take(main, unix.LOCK_SH)
	if err != nil {
		return fail(busy(dir, main, err))
	}
	l.files = append(l.files, f)
	mine := filepath.Join(meta, fmt.Sprintf("lock-shard-%d-of-%d", shard.I, shard.N))
	if f, err = take(mine, unix.LOCK_EX); err != nil {
		return fail(busy(dir, mine, err))
	}
	l.files, l.signed = append(l.files, f), append(l.signed, f)
	if err := sign(f, shard); err != nil {
		return fail(err)
	}
	count := filepath.Join(meta, "lock-shards-"+strconv.Itoa(shard.N))
	if f, err = take(count, unix.LOCK_SH); err != nil {
		return fail(err)
	}
	l.files = append(l.files, f)
	others, _ := filepath.Glob(filepath.Join(meta, "lock-shards-*"))
	for _, o := range others {
		if o == count {
			continue
		}
		// Free unless shards of that count hold it shared.
		g, err := take(o, unix.LOCK_EX)
		if err != nil {
			n := strings.TrimPrefix(filepath.Base(o), "lock-shards-")
			return fail(&BusyError{Dir: dir, Holder: fmt.Sprintf("shards of --shard I/%s are running; shards of another count overlap them: use N=%s", n, n)})
		}
		g.Close()
	}
	return l, nil
}

// errHeld is a lock another process holds.
type errHeld struct{}

func (errHeld) Error() string { return "held" }

func take(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("output dir lock %s: %v", path, err)
	}
	if err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, errHeld{}
		}
		return nil, fmt.Errorf("output dir lock %s: %v", path, err)
	}
	return f, nil
}

func sign(f *os.File, shard Shard) error {
	host, _ := os.Hostname()
	s := shard.String()
	if s == "" {
		s = "all runs"
	}
	data, _ := json.Marshal(holder{PID: os.Getpid(), Host: host, Shard: s, Started: time.Now().UTC().Format(time.RFC3339)})
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt(append(data, '\n'), 0)
	return err
}

// busy turns a held lock into a refusal naming who holds it.
func busy(dir, path string, err error) error {
	if _, ok := err.(errHeld); !ok {
		return err
	}
	var names []string
	if filepath.Base(path) == "lock" {
		// Held exclusively by an unsharded run (it signed it), or shared
		// by shards (each signed its own file).
		shards, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "lock-shard-*-of-*"))
		names = append([]string{path}, shards...)
	} else {
		names = []string{path}
	}
	var who []string
	for _, n := range names {
		data, err := os.ReadFile(n)
		var h holder
		if err != nil || json.Unmarshal(data, &h) != nil || h.PID == 0 {
			continue
		}
		if host, _ := os.Hostname(); h.Host == host && unix.Kill(h.PID, 0) == unix.ESRCH {
			continue // signed by a run that has ended
		}
		who = append(who, fmt.Sprintf("pid %d on %s, %s, since %s", h.PID, h.Host, h.Shard, h.Started))
	}
	if len(who) == 0 {
		who = []string{"holder unknown; see " + path}
	}
	return &BusyError{Dir: dir, Holder: strings.Join(who, "; ")}
}
