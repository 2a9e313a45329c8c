package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/trajectory"
	formats "github.com/pvisor/pvisor/trajectory/agents"
)

// The initial repository every agent starts from. README.md has a typo the agent
// fixes with its edit tool.
var initialFiles = map[string]string{
	"README.md":       "# Greeter\n\nA tiny greeter. It prints a greting.\n",
	"main.py":         "from greeter.util import greet\n\nif __name__ == \"__main__\":\n    print(greet(\"world\"))\n",
	"greeter/util.py": "def greet(name):\n    return f\"Hello, {name}!\"\n\n\ndef shout(name):\n    return greet(name).upper()\n",
}

// versionRe finds the version in a manifest's cli_version ("2.1.197 (Claude Code)").
var versionRe = regexp.MustCompile(`\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?`)

// manifest describes one recorded session (testdata/e2e/sessions/<agent>/manifest.json).
type manifest struct {
	Agent      string            `json:"agent"`
	Package    string            `json:"package"`     // npm package@version installed
	CLIVersion string            `json:"cli_version"` // what `--version` printed
	Protocol   string            `json:"protocol"`
	Argv       []string          `json:"argv"`
	Env        map[string]string `json:"env"`              // the CLI's whole environment, API key redacted
	Config     map[string]string `json:"config,omitempty"` // config files the test wrote, by path under home_path
	Prompt     string            `json:"prompt"`
	RepoPath   string            `json:"repo_path"`
	HomePath   string            `json:"home_path"`
	SessionID  string            `json:"session_id"`
	NativePath string            `json:"native_path"` // where the CLI wrote the session, relative to home_path
	Files      map[string]string `json:"files"`       // role (session, stdout, initial_repo, requests) → file here
	Script     fakemodel.Script  `json:"script"`      // as served, before {CWD} expansion
	Requests   map[string]int    `json:"requests"`    // fake-model requests by kind
	ToolCalls  int               `json:"tool_calls"`  // tool calls found in the native session
	RunSeconds float64           `json:"run_seconds"`
	RecordedAt string            `json:"recorded_at"`
}

// jsonLines parses every line of a JSONL stream, failing on the first bad one.
func jsonLines(data []byte) ([]map[string]any, error) {
	var out []map[string]any
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("no JSON lines")
	}
	return out, nil
}

// countJSONL counts, over the lines of a JSONL file, the array elements at arrayPath
// (or the line itself when arrayPath is empty) for which match returns true.
func countJSONL(data []byte, arrayPath string, match func(gjson.Result) bool) (int, error) {
	if _, err := jsonLines(data); err != nil {
		return 0, err
	}
	n := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		v := gjson.ParseBytes(line)
		if arrayPath == "" {
			if match(v) {
				n++
			}
			continue
		}
		v.Get(arrayPath).ForEach(func(_, e gjson.Result) bool {
			if match(e) {
				n++
			}
			return true
		})
	}
	return n, nil
}

// inspectClaude counts tool_use blocks and collects tool_results marked is_error.
func inspectClaude(native []byte) (int, []string, error) {
	var failed []string
	n, err := countJSONL(native, "message.content", func(b gjson.Result) bool {
		if b.Get("type").String() == "tool_result" && b.Get("is_error").Bool() {
			failed = append(failed, b.Get("content").Raw)
		}
		return b.Get("type").String() == "tool_use"
	})
	return n, failed, err
}

// inspectCodex counts function and custom tool calls and collects outputs that
// do not report exit code 0.
func inspectCodex(native []byte) (int, []string, error) {
	var failed []string
	n, err := countJSONL(native, "", func(l gjson.Result) bool {
		if l.Get("type").String() != "response_item" {
			return false
		}
		typ := l.Get("payload.type").String()
		if out := l.Get("payload.output").String(); strings.HasSuffix(typ, "_output") &&
			!strings.Contains(out, "Process exited with code 0\n") && !strings.HasPrefix(out, "Exit code: 0\n") {
			failed = append(failed, out)
		}
		return typ == "function_call" || typ == "custom_tool_call"
	})
	return n, failed, err
}

// inspectOpenCode counts tool parts in an export and collects those not completed.
func inspectOpenCode(native []byte) (int, []string, error) {
	n := 0
	var failed []string
	gjson.GetBytes(native, "messages.#.parts").ForEach(func(_, parts gjson.Result) bool {
		parts.ForEach(func(_, p gjson.Result) bool {
			if p.Get("type").String() == "tool" {
				n++
				if st := p.Get("state.status").String(); st != "completed" {
					failed = append(failed, st+": "+p.Get("state.error").String())
				}
			}
			return true
		})
		return true
	})
	return n, failed, nil
}

// inspectPi counts toolCall blocks and collects toolResults marked isError.
func inspectPi(native []byte) (int, []string, error) {
	n := 0
	var failed []string
	_, err := countJSONL(native, "", func(l gjson.Result) bool {
		m := l.Get("message")
		if m.Get("role").String() == "toolResult" && m.Get("isError").Bool() {
			failed = append(failed, m.Get("content").Raw)
		}
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").String() == "toolCall" {
				n++
			}
			return true
		})
		return false
	})
	return n, failed, err
}

// inspectors count the tool calls in an agent's native session and return the
// results it marks as failed.
var inspectors = map[string]func(native []byte) (calls int, failed []string, err error){
	"claude-code": inspectClaude, "codex": inspectCodex, "opencode": inspectOpenCode, "pi": inspectPi,
}

// sessionsDir holds one recording per agent, made by TestRecordSessions -record.
var sessionsDir = filepath.Join("..", "..", "testdata", "e2e", "sessions")

// TestRecordedSessions checks the committed recordings without any CLI: every file
// the manifest names is there and well-formed, the native session holds exactly the
// scripted tool calls with no failed result, and the fake model saw the whole script.
func TestRecordedSessions(t *testing.T) {
	manifests, _ := filepath.Glob(filepath.Join(sessionsDir, "*", "manifest.json"))
	for agent := range inspectors {
		if d, _ := filepath.Glob(filepath.Join(sessionsDir, agent+"@*")); len(d) == 0 {
			t.Errorf("no recording of %s: make one with "+
				"go test -tags e2e ./replay/e2e -run TestRecordSessions -record -record-release %s@<version>", agent, agent)
		}
	}
	for _, mp := range manifests {
		dir := filepath.Dir(mp)
		t.Run(filepath.Base(dir), func(t *testing.T) { checkRecording(t, dir) })
	}
}

// checkRecording validates one recording directory.
func checkRecording(t *testing.T, dir string) {
	m, err := readManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if v := versionRe.FindString(m.CLIVersion); filepath.Base(dir) != m.Agent+"@"+v && !strings.HasPrefix(dir, os.TempDir()) {
		t.Errorf("manifest of %s %q in directory %s, want %s@%s", m.Agent, m.CLIVersion, dir, m.Agent, v)
	}
	read := func(role string) []byte {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, m.Files[role]))
		if err != nil || len(data) == 0 {
			t.Fatalf("%s file %q: %v", role, m.Files[role], err)
		}
		return data
	}

	native := read("session")
	calls, failed, err := inspectors[m.Agent](native)
	if err != nil {
		t.Fatalf("session %s: %v", m.Files["session"], err)
	}
	// pvisor's own decoder reads what this release wrote: one step per
	// scripted response with tool calls.
	format, ok := formats.Lookup(m.Agent)
	if !ok {
		t.Fatalf("no decoder for %s", m.Agent)
	}
	tr, err := format.Decode(bytes.NewReader(native), trajectory.Options{})
	if err != nil {
		t.Fatalf("pvisor cannot decode the session %s wrote: %v", m.CLIVersion, err)
	}
	steps := 0
	for _, r := range m.Script.Replies {
		if len(r.ToolCalls) > 0 {
			steps++
		}
	}
	if got := len(tr.Steps()); got != steps {
		t.Errorf("pvisor decodes %d steps from the session %s wrote; the script has %d responses with tool calls", got, m.CLIVersion, steps)
	}
	if want := scriptCalls(m.Script); calls != want || calls != m.ToolCalls {
		t.Errorf("session holds %d tool calls, manifest says %d, script makes %d", calls, m.ToolCalls, want)
	}
	for _, f := range failed {
		t.Errorf("failed tool result in the session: %s", f)
	}
	if !bytes.Contains(native, []byte(m.RepoPath)) {
		t.Errorf("session never mentions the repo path %s", m.RepoPath)
	}
	if _, err := jsonLines(read("stdout")); err != nil {
		t.Errorf("stdout: %v", err)
	}

	files, err := untar(read("initial_repo"))
	if err != nil {
		t.Fatalf("initial repo: %v", err)
	}
	for name, want := range initialFiles {
		if got := files[name]; got != want {
			t.Errorf("initial repo %s = %q, want %q", name, got, want)
		}
	}
	if !strings.HasPrefix(files[".git/HEAD"], "ref: refs/heads/main") {
		t.Errorf("initial repo has no git HEAD on main: %q", files[".git/HEAD"])
	}

	reqs, err := readRequests(read("requests"))
	if err != nil {
		t.Fatalf("requests: %v", err)
	}
	kinds, served := map[string]int{}, map[int]bool{}
	for _, q := range reqs {
		kinds[q.Kind]++
		if q.Kind == fakemodel.KindMain {
			served[q.Reply] = true
		}
		if q.Status >= 400 {
			t.Errorf("request %d %s was answered %d", q.Seq, q.Path, q.Status)
		}
	}
	if fmt.Sprint(kinds) != fmt.Sprint(m.Requests) {
		t.Errorf("requests by kind %v, manifest says %v", kinds, m.Requests)
	}
	for i := range m.Script.Replies {
		if !served[i] {
			t.Errorf("reply %d was never served", i)
		}
	}
}

func readManifest(path string) (manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return manifest{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m manifest
	if err := dec.Decode(&m); err != nil {
		return manifest{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func scriptCalls(s fakemodel.Script) int {
	n := 0
	for _, r := range s.Replies {
		n += len(r.ToolCalls)
	}
	return n
}

// untar returns the regular files of a .tar.gz by slash path.
func untar(data []byte) (map[string]string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	out := map[string]string{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if hdr.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				return nil, err
			}
			out[hdr.Name] = string(b)
		}
	}
}

// gzipBytes compresses with no name or time in the header, so equal input gives
// equal bytes.
func gzipBytes(data []byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// requestsJSONL is the fake model's request log as JSON lines.
func requestsJSONL(reqs []fakemodel.Request) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, q := range reqs {
		enc.Encode(q)
	}
	return b.Bytes()
}

func readRequests(gz []byte) ([]fakemodel.Request, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	var out []fakemodel.Request
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var q fakemodel.Request
		if err := json.Unmarshal(line, &q); err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}
