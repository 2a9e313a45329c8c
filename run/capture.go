package run

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Output is one captured output stream. When the process wrote more than
// the cap, the middle is dropped: Data holds the first half of the cap, then
// the last half, and OmitAt says where the gap is. Agents truncate output in
// their own ways (Claude keeps the head, Codex head and tail by tokens), so
// formatters get both ends plus the exact totals to quote.
type Output struct {
	Data    []byte
	Total   int64 // bytes the process wrote to this stream
	Lines   int64 // '\n' bytes among all Total bytes (not only the kept ones)
	Omitted int64 // bytes dropped between head and tail; 0 when complete
	OmitAt  int   // index in Data where the omitted bytes belong
}

// Truncated reports whether bytes were dropped from the middle.
func (o Output) Truncated() bool { return o.Omitted > 0 }

// String returns Data as a string (the kept bytes, without any marker).
func (o Output) String() string { return string(o.Data) }

// Head returns the kept bytes before the gap (all of Data when complete).
func (o Output) Head() []byte {
	if o.Omitted == 0 {
		return o.Data
	}
	return o.Data[:o.OmitAt]
}

// Tail returns the kept bytes after the gap (nil when complete).
func (o Output) Tail() []byte {
	if o.Omitted == 0 {
		return nil
	}
	return o.Data[o.OmitAt:]
}

// headTail keeps the first and last bytes of a stream within limit bytes.
type headTail struct {
	limit int // < 0: unlimited
	head  []byte
	tail  []byte // grows up to twice its share, then is cut back
	total int64
	lines int64
}

func (b *headTail) write(p []byte) {
	b.total += int64(len(p))
	b.lines += int64(bytes.Count(p, []byte{'\n'}))
	if b.limit < 0 {
		b.head = append(b.head, p...)
		return
	}
	headCap := b.limit / 2
	if n := min(headCap-len(b.head), len(p)); n > 0 {
		b.head = append(b.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	tailCap := b.limit - headCap
	b.tail = append(b.tail, p...)
	if len(b.tail) > 2*tailCap {
		// Copy so the dropped prefix is not kept alive by the backing array.
		b.tail = append(make([]byte, 0, 2*tailCap), b.tail[len(b.tail)-tailCap:]...)
	}
}

func (b *headTail) output() Output {
	o := Output{Total: b.total, Lines: b.lines}
	k := len(b.tail)
	if b.limit >= 0 && b.total > int64(b.limit) {
		k = min(k, b.limit-b.limit/2)
	}
	o.Data = make([]byte, 0, len(b.head)+k)
	o.Data = append(o.Data, b.head...)
	o.Data = append(o.Data, b.tail[len(b.tail)-k:]...)
	o.Omitted = b.total - int64(len(o.Data))
	if o.Omitted > 0 {
		o.OmitAt = len(b.head)
	}
	return o
}

func (b *headTail) reset() {
	b.head, b.tail, b.total, b.lines = nil, nil, 0, 0
}

const (
	streamStdout = iota
	streamStderr
)

// MaxLogBytes caps each full log (ShellRequest.LogPath): `yes` for three
// seconds would otherwise write close to a gigabyte. Past the cap the log
// ends with LogCapMarker, filled in with the cap and the bytes left out.
var MaxLogBytes int64 = 64 << 20

// LogCapMarker ends a log that hit MaxLogBytes.
const LogCapMarker = "\n[pvisor: full log capped at %d bytes; %d more bytes of output were not written]\n"

// capture collects a process's stdout and stderr separately and, in arrival
// order, combined. Arrival order is exact per read: bytes from one read() of
// either pipe are never split, which is the best a parent can observe.
type capture struct {
	mu       sync.Mutex
	out, err headTail
	all      headTail
	log      *os.File
	logErr   error
	logBytes int64         // written to log (or pending)
	logLost  int64         // not written: over MaxLogBytes
	detached bool          // the call is over: later bytes (background writers) are dropped
	notify   chan struct{} // buffered(1); poked on every write, for exec sessions

	// The log is created while the child starts, not before: creating a
	// file costs about as much as a journal fsync, a good part of a short
	// call. Bytes that arrive before it is open wait in pending.
	logPath string
	opening bool          // openLog has not finished
	pending []byte        // log bytes that came while opening
	logOpen chan struct{} // closed when openLog is done; nil without a log
}

func newCapture(limit int, logPath string) *capture {
	return &capture{
		out:     headTail{limit: limit},
		err:     headTail{limit: limit},
		all:     headTail{limit: limit},
		logPath: logPath,
		opening: logPath != "",
		notify:  make(chan struct{}, 1),
	}
}

// startLog creates the log in the background; call it once, after the child
// started and before anything reads its output.
func (c *capture) startLog() {
	if c.logPath == "" {
		return
	}
	c.logOpen = make(chan struct{})
	go c.openLog()
}

func (c *capture) openLog() {
	defer close(c.logOpen)
	var f *os.File
	err := os.MkdirAll(filepath.Dir(c.logPath), 0o755)
	if err == nil {
		f, err = os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opening = false
	if err != nil {
		c.logErr, c.pending = err, nil
		return
	}
	c.log = f
	if len(c.pending) > 0 {
		_, c.logErr = f.Write(c.pending)
		c.pending = nil
	}
}

// waitLog waits until the log is open or failed to open.
func (c *capture) waitLog() {
	if c.logOpen != nil {
		<-c.logOpen
	}
}

func (c *capture) add(stream int, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.detached {
		return
	}
	if stream == streamStderr {
		c.err.write(p)
	} else {
		c.out.write(p)
	}
	c.all.write(p)
	if (c.log != nil || c.opening) && c.logErr == nil {
		w := p
		if room := MaxLogBytes - c.logBytes; int64(len(w)) > room {
			w = w[:max(room, 0)]
		}
		c.logLost += int64(len(p) - len(w))
		switch {
		case len(w) == 0:
		case c.log == nil:
			c.pending = append(c.pending, w...)
			c.logBytes += int64(len(w))
		default:
			var n int
			n, c.logErr = c.log.Write(w)
			c.logBytes += int64(n)
		}
	}
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// snapshot returns the three streams; with reset it also empties them, so the
// next snapshot holds only newer bytes (exec session polling).
func (c *capture) snapshot(reset bool) (stdout, stderr, combined Output) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stdout, stderr, combined = c.out.output(), c.err.output(), c.all.output()
	if reset {
		c.out.reset()
		c.err.reset()
		c.all.reset()
	}
	return
}

// detach stops recording and closes the log; background writers keep their
// pipe drained (so they never block or get SIGPIPE) but nothing is kept.
func (c *capture) detach() error {
	c.waitLog()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.detached {
		return c.logErr
	}
	c.detached = true
	if c.log != nil {
		if c.logLost > 0 && c.logErr == nil {
			_, c.logErr = fmt.Fprintf(c.log, LogCapMarker, MaxLogBytes, c.logLost)
		}
		if err := c.log.Close(); err != nil && c.logErr == nil {
			c.logErr = err
		}
	}
	return c.logErr
}

// pump copies r into the capture until EOF. done is closed at EOF or when the
// read deadline set by the collector passes; after a deadline the pump keeps
// reading (into a detached capture) until the writers go away.
func (c *capture) pump(r *os.File, stream int, done chan<- struct{}) {
	defer r.Close()
	signalled := false
	signal := func() {
		if !signalled {
			signalled = true
			close(done)
		}
	}
	defer signal()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.add(stream, buf[:n])
		}
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			signal()
			if r.SetReadDeadline(time.Time{}) != nil {
				return
			}
			continue
		}
		// io.EOF for pipes; EIO is how a pty master reports that every
		// slave side is closed.
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.EIO) || errors.Is(err, os.ErrClosed) {
			return
		}
		return
	}
}
