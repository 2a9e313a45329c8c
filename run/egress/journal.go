package egress

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"
)

// Call is the replayed call a connection is attributed to: the one that
// was running when the connecting process (or its ancestor) was started,
// so a daemon left behind by step 1 is still step 1's.
type Call struct {
	Step   int    `json:"step,omitempty"`
	CallID string `json:"call_id,omitempty"`
	Tool   string `json:"tool,omitempty"`
	// Label names what is not a trajectory call (boundary prompt commands).
	Label string `json:"label,omitempty"`
}

// Entry is one connection attempt. It never holds a header, a path, a
// query or a body: only where the connection went and how much it carried.
type Entry struct {
	Seq  int       `json:"seq"`
	Time time.Time `json:"time"`
	Call *Call     `json:"call,omitempty"`
	// Kind is "connect" (an HTTPS CONNECT tunnel) or "http" (a forwarded
	// plain HTTP request; Method says which).
	Kind    string `json:"kind"`
	Method  string `json:"method,omitempty"`
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Address string `json:"address,omitempty"` // the IP:port dialed
	Allowed bool   `json:"allowed"`
	// Reason: for an allowed attempt "public" or "allowlist" (Rule says
	// which entry); for a denied one "policy-deny", "not-allowlisted",
	// "private-address", "unresolvable", "bad-request" or
	// "too-many-connections".
	Reason     string `json:"reason"`
	Rule       string `json:"rule,omitempty"`
	Error      string `json:"error,omitempty"` // an allowed attempt that failed (dial, upstream)
	BytesUp    int64  `json:"bytes_up"`
	BytesDown  int64  `json:"bytes_down"`
	DurationMS int64  `json:"duration_ms"`
}

// MaxJournal is how many entries a journal keeps; later attempts are
// still counted in the summary. A hostile trajectory can open connections
// in a loop, and the journal must not grow with it.
const MaxJournal = 10000

// maxHosts bounds the per-destination rows of the summary.
const maxHosts = 200

// journal collects entries; safe for concurrent use.
type journal struct {
	mu      sync.Mutex
	max     int
	entries []*Entry
	seq     int
	dropped int
	open    int // entries begun and not finished
	sum     Summary
	hosts   map[string]*HostSummary
}

func newJournal(max int) *journal {
	if max <= 0 {
		max = MaxJournal
	}
	return &journal{max: max, hosts: map[string]*HostSummary{}}
}

// begin records a decided attempt; finish completes it with its byte
// counts. Entries past the cap are finished only into the summary.
func (j *journal) begin(e *Entry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	e.Seq = j.seq
	if len(j.entries) < j.max {
		j.entries = append(j.entries, e)
	} else {
		j.dropped++
	}
	j.open++
}

func (j *journal) finish(e *Entry, start time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e.DurationMS = time.Since(start).Milliseconds()
	j.open--
	s := &j.sum
	s.Attempts++
	if e.Allowed {
		s.Allowed++
	} else {
		s.Denied++
	}
	s.BytesUp += e.BytesUp
	s.BytesDown += e.BytesDown
	key := fmt.Sprintf("%s:%d", e.Host, e.Port)
	h := j.hosts[key]
	if h == nil {
		if len(j.hosts) >= maxHosts {
			s.OtherHosts++
			return
		}
		h = &HostSummary{Host: e.Host, Port: e.Port}
		j.hosts[key] = h
	}
	if e.Allowed {
		h.Allowed++
	} else {
		h.Denied++
	}
	h.BytesUp += e.BytesUp
	h.BytesDown += e.BytesDown
}

// Summary is what the result's metadata carries.
type Summary struct {
	Attempts  int   `json:"attempts"`
	Allowed   int   `json:"allowed"`
	Denied    int   `json:"denied"`
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
	// Hosts: per destination, most attempts first, at most 200; OtherHosts
	// counts the attempts to destinations past that.
	Hosts      []HostSummary `json:"hosts"`
	OtherHosts int           `json:"other_hosts,omitempty"`
	// JournalDropped attempts are counted here but not in the journal.
	JournalDropped int `json:"journal_dropped,omitempty"`
	// Unfinished connections were still open when the summary was taken.
	Unfinished int `json:"unfinished,omitempty"`
}

// HostSummary is one destination's line of the summary.
type HostSummary struct {
	Host      string `json:"host"`
	Port      int    `json:"port"`
	Allowed   int    `json:"allowed"`
	Denied    int    `json:"denied"`
	BytesUp   int64  `json:"bytes_up"`
	BytesDown int64  `json:"bytes_down"`
}

func (j *journal) summary() Summary {
	j.mu.Lock()
	defer j.mu.Unlock()
	s := j.sum
	s.JournalDropped, s.Unfinished = j.dropped, j.open
	s.Hosts = make([]HostSummary, 0, len(j.hosts))
	for _, h := range j.hosts {
		s.Hosts = append(s.Hosts, *h)
	}
	sort.Slice(s.Hosts, func(a, b int) bool {
		x, y := s.Hosts[a], s.Hosts[b]
		if nx, ny := x.Allowed+x.Denied, y.Allowed+y.Denied; nx != ny {
			return nx > ny
		}
		if x.Host != y.Host {
			return x.Host < y.Host
		}
		return x.Port < y.Port
	})
	return s
}

// snapshot copies the kept entries (an open connection's counts are as
// far as it got).
func (j *journal) snapshot() []Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Entry, len(j.entries))
	for i, e := range j.entries {
		out[i] = *e
		if e.Call != nil {
			c := *e.Call
			out[i].Call = &c
		}
	}
	return out
}

// WriteJSONL writes entries one per line to path (created 0600).
func WriteJSONL(path string, entries []Entry) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for i := range entries {
		if err := enc.Encode(&entries[i]); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
