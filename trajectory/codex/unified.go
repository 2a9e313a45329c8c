package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/run/patch"
	"github.com/pvisor/pvisor/trajectory"
)

// Unified exec (exec_command / write_stdin), as codex-rs 0.12x-0.17x run
// it. Limits are the ones the 0.171 tool descriptions state and its
// handler applies: yield 10 s by default, clamped to 250 ms-30 s; a
// non-empty write waits 250 ms by default (cap 30 s) after a 100 ms pause;
// an empty poll waits 5-300 s; at most 10000 output tokens (a larger
// max_output_tokens is capped: codex 0.171 run by hand, and codemie 0.125
// line 59 asked for 22000 and got 10000).
const (
	defaultYield     = 10 * time.Second
	minYield         = 250 * time.Millisecond
	maxYield         = 30 * time.Second
	minEmptyPoll     = 5 * time.Second
	maxEmptyPoll     = 300 * time.Second
	stdinSettle      = 100 * time.Millisecond
	defaultMaxTokens = 10000
	execBufferCap    = 1 << 20
	// Codex starts the wall clock of exec_command once the process is
	// spawned and registered, which took 125-136 ms in every measurement
	// with codex 0.171 on Linux ("sleep 0.2" reports 0.0745 s, "sleep 1"
	// 0.8754 s, anything under ~0.12 s 0.0000). The replay waits that much
	// longer for the yield and reports the wall time without it.
	spawnLag = 125 * time.Millisecond
	// Ids for processes the recording has no running session for (it saw
	// them exit): outside Codex's 1000-99999 range, so they never collide
	// with a recorded id a later call may reuse.
	freshSessionBase = 100000
)

// execEnv is what Codex sets for every unified exec process
// (UNIFIED_EXEC_ENV, observed verbatim in codex 0.171's `env`).
var execEnv = []string{
	"NO_COLOR=1", "TERM=dumb", "LANG=C.UTF-8", "LC_CTYPE=C.UTF-8", "LC_ALL=C.UTF-8",
	"COLORTERM=", "PAGER=cat", "GIT_PAGER=cat", "GH_PAGER=cat", "CODEX_CI=1",
}

func withEnv(base, over []string) []string {
	out := make([]string, 0, len(base)+len(over))
	set := map[string]bool{}
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); !set[k] {
			out = append(out, kv)
		}
	}
	return append(out, over...)
}

type execArgs struct {
	Cmd             string   `json:"cmd"`
	Workdir         string   `json:"workdir"`
	Shell           string   `json:"shell"`
	Login           *bool    `json:"login"`
	YieldTimeMS     *float64 `json:"yield_time_ms"`
	MaxOutputTokens *float64 `json:"max_output_tokens"`
	TTY             bool     `json:"tty"`
}

type stdinArgs struct {
	SessionID       json.RawMessage `json:"session_id"`
	Chars           string          `json:"chars"`
	YieldTimeMS     *float64        `json:"yield_time_ms"`
	MaxOutputTokens *float64        `json:"max_output_tokens"`
}

func millis(v *float64, def time.Duration) time.Duration {
	if v == nil {
		return def
	}
	return time.Duration(*v * float64(time.Millisecond))
}

func maxTokens(v *float64) int {
	if v == nil || *v >= defaultMaxTokens {
		return defaultMaxTokens
	}
	return max(0, int(*v))
}

var runningRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^Process running with session ID (\d+)$`) })

// recordedSession is the session id the recorded result of c reported,
// 0 when it reported none.
func recordedSession(c *trajectory.ToolCall) int {
	if c.Observation == nil {
		return 0
	}
	head := c.Observation.Content
	if i := strings.Index(head, "\nOutput:\n"); i >= 0 {
		head = head[:i]
	}
	m := runningRe().FindStringSubmatch(head)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

var (
	chunkLineRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^Chunk ID: [0-9a-f]{6}$`) })
	wallLineRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^Wall time: \d+\.\d{4} seconds$`) })
)

// Normalize masks the parts of a unified exec result that differ from run
// to run however faithful the replay: the random chunk id and the measured
// wall time (4 decimals). For comparing a fresh result with the recorded
// one; apply_patch and shell texts have no such fields that are not
// rounded to tenths.
func Normalize(content string) string {
	content = chunkLineRe().ReplaceAllString(content, "Chunk ID: <random>")
	return wallLineRe().ReplaceAllString(content, "Wall time: <measured> seconds")
}

func chunkID() string { return fmt.Sprintf("%06x", rand.IntN(1<<24)) }

func (s *session) execCommand(ctx context.Context, call *trajectory.ToolCall) (trajectory.Fresh, error) {
	var a execArgs
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return trajectory.Fresh{}, fmt.Errorf("exec_command arguments: %w", err)
	}
	dir := s.resolveDir(a.Workdir)
	if text, cd, ok := patch.FromScript(a.Cmd); ok {
		return s.patchViaExec(text, s.joinDir(dir, cd)), nil
	}
	yield := min(max(millis(a.YieldTimeMS, defaultYield), minYield), maxYield)
	id := recordedSession(call)
	if _, taken := s.execs[id]; id == 0 || taken {
		id = s.nextFresh()
	}
	log := s.logPath(call)
	req := run.ExecRequest{
		ShellRequest: run.ShellRequest{
			Command: s.mapText(a.Cmd), Shell: s.shellArgv(a.Shell, a.Login), Dir: dir,
			Env: withEnv(s.env.Env, execEnv), LogPath: log, MaxOutput: execBufferCap, MergeStderr: !a.TTY,
		},
		SessionID: id, TTY: a.TTY, Yield: yield + spawnLag,
	}
	res, err := s.r.Exec(ctx, req)
	var re *run.Error
	if errors.As(err, &re) && re.Kind == run.SessionExists {
		req.SessionID = s.nextFresh()
		res, err = s.r.Exec(ctx, req)
	}
	if re, ok := spawnFailure(err); ok {
		msg := "Failed to create unified exec process: " + spawnErrno(re)
		inner := strconv.Quote("Rejected(" + strconv.Quote(msg) + ")")
		return trajectory.Fresh{Content: "exec_command failed: CreateProcess { message: " + inner + " }"}, nil
	}
	if err != nil {
		return trajectory.Fresh{}, err
	}
	if res.Running {
		s.execs[res.SessionID] = &liveExec{tty: a.TTY, log: log}
	}
	return s.execFresh(res, res.Combined, max(0, res.Wall-spawnLag), maxTokens(a.MaxOutputTokens), log), nil
}

func (s *session) nextFresh() int {
	for {
		id := s.fresh
		s.fresh++
		if _, taken := s.execs[id]; !taken {
			return id
		}
	}
}

// joinDir is the directory of a `cd DIR && apply_patch` script.
func (s *session) joinDir(dir, cd string) string {
	if cd == "" {
		return dir
	}
	cd = s.mapText(cd)
	if filepath.IsAbs(cd) {
		return filepath.Clean(cd)
	}
	return filepath.Join(dir, cd)
}

func (s *session) writeStdin(ctx context.Context, call *trajectory.ToolCall) (trajectory.Fresh, error) {
	var a stdinArgs
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return trajectory.Fresh{}, fmt.Errorf("write_stdin arguments: %w", err)
	}
	id, err := strconv.Atoi(string(a.SessionID))
	if err != nil {
		return trajectory.Fresh{Content: badSessionID(string(call.Arguments))}, nil
	}
	ex, ok := s.execs[id]
	if !ok {
		return trajectory.Fresh{Content: fmt.Sprintf("write_stdin failed: Unknown process id %d", id)}, nil
	}
	if a.Chars != "" && !ex.tty {
		return trajectory.Fresh{Content: "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true to keep stdin open"}, nil
	}
	yield := max(millis(a.YieldTimeMS, minYield), minYield)
	if a.Chars == "" {
		yield = min(max(yield, minEmptyPoll), maxEmptyPoll)
	} else {
		yield = min(yield, maxYield)
	}
	var res run.ExecResult
	out := run.Output{}
	wall := time.Duration(0)
	if a.Chars != "" {
		// Codex writes, pauses 100 ms, then starts the clock and polls.
		res, err = s.r.WriteStdin(ctx, run.StdinRequest{SessionID: id, Data: []byte(a.Chars), Yield: stdinSettle})
		out = res.Combined
	}
	if err == nil && (a.Chars == "" || res.Running) {
		res, err = s.r.WriteStdin(ctx, run.StdinRequest{SessionID: id, Yield: yield})
		out, wall = joinOutput(out, res.Combined), res.Wall
	}
	var re *run.Error
	if errors.As(err, &re) && re.Kind == run.NoSession {
		delete(s.execs, id)
		return trajectory.Fresh{Content: fmt.Sprintf("write_stdin failed: Unknown process id %d", id)}, nil
	}
	if err != nil {
		return trajectory.Fresh{}, err
	}
	if !res.Running {
		delete(s.execs, id)
	}
	res.SessionID = id
	return s.execFresh(res, out, wall, maxTokens(a.MaxOutputTokens), ex.log), nil
}

// badSessionID is serde's refusal of a non-numeric session_id.
func badSessionID(args string) string {
	v := gjson.Get(args, "session_id")
	line, col := 1, 1
	for i := 0; i < v.Index+len(v.Raw) && i < len(args); i++ {
		if args[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	what := "string " + strconv.Quote(v.String())
	if v.Type != gjson.String {
		what = "value " + v.Raw
	}
	return fmt.Sprintf("failed to parse function arguments: invalid type: %s, expected i32 at line %d column %d", what, line, col-1)
}

func joinOutput(a, b run.Output) run.Output {
	if a.Total == 0 {
		return b
	}
	o := run.Output{Data: append(append([]byte(nil), a.Data...), b.Data...), Total: a.Total + b.Total,
		Lines: a.Lines + b.Lines, Omitted: a.Omitted + b.Omitted}
	switch {
	case a.Omitted > 0:
		o.OmitAt = a.OmitAt
	case b.Omitted > 0:
		o.OmitAt = len(a.Data) + b.OmitAt
	}
	return o
}

// execFresh formats a unified exec result:
//
//	Chunk ID: 6 random hex digits
//	Wall time: %.4f seconds
//	Process exited with code N          (when it exited)
//	Process running with session ID N   (while it runs)
//	Original token count: ceil(bytes/4)
//	Output:
//	<text, truncated to the token budget>
func (s *session) execFresh(res run.ExecResult, out run.Output, wall time.Duration, budget int, log string) trajectory.Fresh {
	header := s.shapes.execHeader()
	var text string
	var tokens int64
	omittedLine := ""
	if out.Omitted > 0 && header == headerWarning {
		// 0.171 keeps head and tail around its buffer's marker, counts
		// every byte written, and names the gap instead of the line count.
		text = lossyUTF8(out.Head()) + fmt.Sprintf("\n... %d bytes omitted ...\n", out.Omitted) + lossyUTF8(out.Tail())
		omittedLine = fmt.Sprintf("... %d bytes omitted ...", out.Omitted)
		tokens = approxTokens(out.Total)
	} else {
		text = lossyUTF8(out.Data)
		tokens = approxTokens(int64(len(out.Data)))
		if header == headerWarning {
			tokens = approxTokens(out.Total)
		}
	}
	body := formatTruncated(text, budget, header, tokens)
	if omittedLine != "" && body != text {
		body = fmt.Sprintf("Warning: truncated output (original token count: %d)\n%s\n\n", tokens, omittedLine) + truncateTokens(text, budget)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Chunk ID: %s\nWall time: %.4f seconds\n", chunkID(), wall.Seconds())
	f := trajectory.Fresh{LogPath: log, Duration: wall}
	if res.Running {
		fmt.Fprintf(&b, "Process running with session ID %d\n", res.SessionID)
	} else {
		fmt.Fprintf(&b, "Process exited with code %d\n", res.ExitCode)
		code := res.ExitCode
		f.ExitCode, f.Duration = &code, res.Duration
	}
	fmt.Fprintf(&b, "Original token count: %d\nOutput:\n%s", tokens, body)
	f.Content = b.String()
	return f
}
