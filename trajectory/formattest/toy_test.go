package formattest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
)

// toy is a small line format for testing the harness itself:
//
//	call ID NAME        a model response with one tool call
//	obs ID [error] ...  the result of call ID
//	say ...             a text-only response
//
// Its fields plant the bugs the harness must catch.
type toy struct {
	extraLine   int  // WritePrefix keeps this many lines too many
	noBoundary  bool // WritePrefix skips CheckBoundary
	refuseCuts  bool // WritePrefix refuses every cut
	leanContent bool // a lean decode keeps observation content
	plainErrors bool // Decode fails with errors that are not *trajectory.Error
	pastEnd     bool // the last action's locator ends past the file
}

func (toy) Agent() string     { return "toy" }
func (toy) PrefixExt() string { return "txt" }
func (toy) Detect(head []byte) bool {
	return bytes.HasPrefix(head, []byte("call ")) || bytes.HasPrefix(head, []byte("say "))
}
func (toy) ReplayTools() []string { return []string{"run"} }
func (toy) CheckReplayable(c *trajectory.ToolCall) error {
	if c.Name != "run" {
		return fmt.Errorf("toy runs only run, not %s", c.Name)
	}
	return nil
}
func (toy) PrefixModelTurns(t *trajectory.Trajectory, afterStep int) int {
	return t.ActionIndex(afterStep) + 1
}

func (f toy) Decode(r io.Reader, opts trajectory.Options) (*trajectory.Trajectory, error) {
	tr := &trajectory.Trajectory{Agent: "toy", Format: "lines"}
	pending := map[string][2]int{} // call id -> action, call
	sc := bufio.NewScanner(r)
	var off int64
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		loc := trajectory.Locator{Unit: "line", First: n, Last: n, StartByte: off, EndByte: off + int64(len(line)) + 1}
		off = loc.EndByte
		tr.Lines = n
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch {
		case fields[0] == "call" && len(fields) == 3:
			pending[fields[1]] = [2]int{len(tr.Actions), 0}
			tr.Actions = append(tr.Actions, trajectory.Action{Locator: loc, Calls: []trajectory.ToolCall{
				{ID: fields[1], Name: fields[2], Arguments: []byte(`{}`), Locator: loc}}})
		case fields[0] == "obs" && len(fields) >= 2:
			at, ok := pending[fields[1]]
			if !ok {
				return nil, trajectory.Errorf(n, "result for unknown call %s", fields[1])
			}
			delete(pending, fields[1])
			o := &trajectory.Observation{IsError: len(fields) > 2 && fields[2] == "error", Locator: loc}
			if !opts.SkipObservationContent || f.leanContent {
				o.Content = strings.Join(fields[2:], " ")
			}
			a := &tr.Actions[at[0]]
			a.Calls[at[1]].Observation = o
			a.Locator = a.Locator.Extend(loc)
		case fields[0] == "say":
			tr.Actions = append(tr.Actions, trajectory.Action{Text: strings.Join(fields[1:], " "), Locator: loc})
		default:
			if f.plainErrors {
				return nil, fmt.Errorf("bad line %d", n)
			}
			return nil, trajectory.Errorf(n, "unknown record %q", fields[0])
		}
	}
	if f.pastEnd && len(tr.Actions) > 0 {
		tr.Actions[len(tr.Actions)-1].Locator.EndByte += 10
	}
	tr.NumberSteps()
	return tr, nil
}

func (f toy) WritePrefix(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int) error {
	if !f.noBoundary {
		if err := trajectory.CheckBoundary(t, afterStep); err != nil {
			return err
		}
	}
	if f.refuseCuts {
		return trajectory.Errorf(0, "toy refuses to cut")
	}
	end := size
	if a, ok := t.Step(afterStep); ok {
		end = a.Locator.EndByte
	}
	data := make([]byte, size)
	if _, err := src.ReadAt(data, 0); err != nil && err != io.EOF {
		return err
	}
	for range f.extraLine {
		if i := bytes.IndexByte(data[end:], '\n'); i >= 0 {
			end += int64(i) + 1
		}
	}
	_, err := w.Write(data[:end])
	return err
}

const toySession = `say hello
call c1 run
obs c1 ok
call c2 run
obs c2 error boom
say thinking
call c3 read
obs c3 text
call c4 run
`

// recorder is a testing.TB that keeps the failures a check reports. Only
// the methods the harness calls are implemented; the embedded nil TB makes
// any other call panic, so a new one cannot go unnoticed.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}
func (r *recorder) Error(args ...any) { r.failures = append(r.failures, fmt.Sprint(args...)) }
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) {
	r.Error(args...)
	runtime.Goexit()
}

// failures runs check with a recorder and returns what it reported.
func failures(check func(t testing.TB)) []string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	return r.failures
}

// expectFailure requires check to report a failure containing want, or no
// failure when want is "".
func expectFailure(t *testing.T, want string, check func(t testing.TB)) {
	t.Helper()
	got := failures(check)
	if want == "" {
		if len(got) > 0 {
			t.Errorf("unexpected failures: %q", got)
		}
		return
	}
	for _, f := range got {
		if strings.Contains(f, want) {
			return
		}
	}
	t.Errorf("failures %q do not mention %q", got, want)
}
