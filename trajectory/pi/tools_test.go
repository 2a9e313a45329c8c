package pi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	pngenc "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// piDist regenerates testdata/oracle/tools@<release>.golden from the real
// pi tools of that release (Node ≥ 22.19 first on PATH for ≥ 0.83):
// -pi-dist=/work/main/.e2e/cli/pi@1.6.0/node_modules/@earendil-works/pi-coding-agent/dist
var piDist = flag.String("pi-dist", "", "pi-coding-agent dist dir: rerun the tool cases through the real pi (node) and rewrite its release's golden")

const (
	fakeCwd = "/work/proj" // the recorded cwd the cases pretend to come from
	fakeTmp = "/tmp-pi"    // where pi keeps full bash output, normalized
)

// goldenTools is the oracle file of one release.
func goldenTools(release string) string { return "testdata/oracle/tools@" + release + ".golden" }

// toolFixture is the workspace every case list starts from.
func toolFixture(t *testing.T, dir string) {
	t.Helper()
	var big, wide, long strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&big, "line %d\n", i)
	}
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&wide, "%s %d\n", strings.Repeat("x", 100), i)
	}
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&long, "l%d\n", i)
	}
	files := map[string]string{
		"hello.txt":     "hello\nworld\n",
		"sub/x.py":      "def f():\n    return 1\n",
		"sub/deep/y.py": "def g(): pass\n",
		"big.txt":       big.String(),
		"wide.txt":      wide.String(),
		"huge.txt":      strings.Repeat("a", 60000),
		"crlf.txt":      "a\r\nb\r\nc\r\n",
		"bad.txt":       "ok \xe2\x82 end \xff\n",
		"quotes.txt":    "say \u201chello\u201d \u2014 now  \nnext\n",
		"dup.txt":       "x\nx\n",
		"long.txt":      long.String(),
		".hidden":       "secret hello\n",
		"a_b":           "", "a-b": "", "a.b": "", "B.md": "# B\n", "Zeta": "", "10": "", "9": "",
		"longline.py":      "def " + strings.Repeat("y", 600) + "\n",
		"bom.txt":          "\uFEFFbom line\r\nsecond\r\n",
		"emptydir/.keep":   "",
		"nested/only/file": "deep\n",
		"fuzzy.txt":        "keep  \nsay \u201chi\u201d\nkeep \u2014 too  \n",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var png bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 4, 3))
	if err := pngenc.Encode(&png, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pic.png"), png.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "emptydir", ".keep")); err != nil {
		t.Fatal(err)
	}
}

// toolCases run in order on one fixture ({CWD} is the session cwd).
var toolCases = []struct{ tool, args string }{
	{"read", `{"path":"hello.txt"}`},
	{"read", `{"path":"big.txt","offset":2,"limit":3}`},
	{"read", `{"path":"{CWD}/hello.txt","limit":1}`},
	{"read", `{"path":"hello.txt","offset":2,"limit":0}`},
	{"read", `{"path":"nope.txt"}`},
	{"read", `{"path":"sub"}`},
	{"read", `{"path":"big.txt"}`},
	{"read", `{"path":"big.txt","offset":2990}`},
	{"read", `{"path":"wide.txt"}`},
	{"read", `{"path":"huge.txt"}`},
	{"read", `{"path":"hello.txt","offset":10}`},
	{"read", `{"path":"crlf.txt"}`},
	{"read", `{"path":"bad.txt"}`},
	{"read", `{"path":"@hello.txt"}`},
	{"write", `{"path":"new/dir/f.txt","content":"h\u00e9llo \ud83d\ude00\n"}`},
	{"write", `{"path":"sub","content":"x"}`},
	{"write", `{"path":"hello.txt/x.txt","content":"x"}`},
	{"write", `{"path":"hello.txt/a/x.txt","content":"x"}`},
	{"write", `{"path":"{CWD}/abs.txt","content":""}`},
	{"edit", `{"path":"hello.txt","edits":[{"oldText":"world","newText":"there"}]}`},
	{"edit", `{"path":"long.txt","edits":[{"oldText":"l5\n","newText":"L5\nL5b\n"},{"oldText":"l150\n","newText":""}]}`},
	{"edit", `{"path":"long.txt","edits":[{"oldText":"l100\nl101\nl102\nl103\nl104\nl105\nl106\nl107\nl108\nl109\nl110\n","newText":"l100\nl101\nl102\nl103\nX\nl105\nl106\nl107\nl108\nl109\nY\n"}]}`},
	{"edit", `{"path":"hello.txt","edits":[{"oldText":"nothere","newText":"x"}]}`},
	{"edit", `{"path":"hello.txt","edits":[{"oldText":"hello","newText":"a"},{"oldText":"nothere","newText":"x"}]}`},
	{"edit", `{"path":"dup.txt","edits":[{"oldText":"x","newText":"y"}]}`},
	{"edit", `{"path":"dup.txt","edits":[{"oldText":"x\nx","newText":"x\nx"}]}`},
	{"edit", `{"path":"long.txt","edits":[{"oldText":"l20\nl21","newText":"a"},{"oldText":"l21\nl22","newText":"b"}]}`},
	{"edit", `{"path":"long.txt","edits":[{"oldText":"","newText":"b"}]}`},
	{"edit", `{"path":"nope.txt","edits":[{"oldText":"a","newText":"b"}]}`},
	{"edit", `{"path":"crlf.txt","oldText":"b\nc","newText":"B\nC"}`},
	{"edit", `{"path":"bom.txt","edits":[{"oldText":"second","newText":"2nd"}]}`},
	{"edit", `{"path":"quotes.txt","edits":[{"oldText":"say \"hello\" - now\nnext","newText":"said"}]}`},
	{"edit", `{"path":"sub","edits":[{"oldText":"a","newText":"b"}]}`},
	{"edit", `{"path":"hello.txt","edits":"[{\"oldText\":\"there\",\"newText\":\"you\"}]"}`},
	{"read", `{"path":"crlf.txt"}`},
	{"read", `{"path":"quotes.txt"}`},
	{"ls", `{}`},
	{"ls", `{"path":"sub"}`},
	{"ls", `{"path":".","limit":3}`},
	{"ls", `{"path":"emptydir"}`},
	{"ls", `{"path":"nope"}`},
	{"ls", `{"path":"hello.txt"}`},
	{"ls", `{"path":"{CWD}/sub/"}`},
	{"find", `{"pattern":"*.py"}`},
	{"find", `{"pattern":"**/*.py"}`},
	{"find", `{"pattern":"sub/**/*.py"}`},
	{"find", `{"pattern":"only"}`},
	{"find", `{"pattern":"*.txt","limit":2}`},
	{"find", `{"pattern":"*.zzz"}`},
	{"find", `{"pattern":"*.py","path":"sub"}`},
	{"find", `{"pattern":"*.py","path":"nope"}`},
	{"read", `{"path":"pic.png"}`},
	{"grep", `{"pattern":"hello"}`},
	{"grep", `{"pattern":"def ","glob":"*.py"}`},
	{"grep", `{"pattern":"return","context":1}`},
	{"grep", `{"pattern":"HELLO","ignoreCase":true,"path":"hello.txt"}`},
	{"grep", `{"pattern":"l1(","literal":true}`},
	{"grep", `{"pattern":"line","path":"big.txt","limit":2}`},
	{"grep", `{"pattern":"zzzz"}`},
	{"grep", `{"pattern":"("}`},
	{"grep", `{"pattern":"x","path":"nope"}`},
	{"grep", `{"pattern":"def y","path":"longline.py"}`},
	{"bash", `{"command":"echo hi"}`},
	{"bash", `{"command":"printf 'a\\nb'"}`},
	{"bash", `{"command":"true"}`},
	{"bash", `{"command":"exit 3"}`},
	{"bash", `{"command":"echo out; echo err >&2; exit 1"}`},
	{"bash", `{"command":"cd sub && ls"}`},
	{"bash", `{"command":"ls {CWD}/sub"}`},
	{"bash", `{"command":"seq 1 3000"}`},
	{"bash", `{"command":"seq 1 3000; exit 2"}`},
	{"bash", `{"command":"head -c 70000 /dev/zero | tr '\\0' 'z'"}`},
	{"bash", `{"command":"for i in $(seq 1 600); do printf '%0100d\\n' $i; done"}`},
	{"bash", `{"command":"seq 1 300000"}`},
	{"bash", `{"command":"echo a; head -c 3000000 /dev/zero | tr '\\0' y"}`},
	{"bash", `{"command":"echo before; sleep 5","timeout":0.5}`},
	{"bash", `{"command":"sleep 5","timeout":1}`},
	{"bash", `{"command":"printf 'x\\033[31my\\r\\n'"}`},
	{"bash", `{"command":"kill -9 $$"}`},
	// Semantics that changed in 0.79.9-1.6 (see semantics.go).
	{"edit", `{"path":"fuzzy.txt","edits":[{"oldText":"say \"hi\"","newText":"said"}]}`},
	{"grep", `{"pattern":"x","path":"dup.txt","context":1}`},
	{"grep", `{"pattern":"l1","path":"long.txt","context":2,"limit":3}`},
	{"grep", `{"pattern":"def","glob":"./sub/**","context":1}`},
	{"bash", `{"command":"seq 1 2500; exit 4"}`},
}

var (
	bashTmpRe = regexp.MustCompile(`pi-bash-[0-9a-f]{16}\.log`)
)

type toolOutcome struct {
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Content string          `json:"content"`
	Details json.RawMessage `json:"details,omitempty"`
	IsError bool            `json:"isError"`
}

// normalize replaces the run's own directories by fixed names.
func normalize(s, cwd, tmp string) string {
	if tmp != "" {
		s = strings.ReplaceAll(s, tmp, fakeTmp)
	}
	s = strings.ReplaceAll(s, cwd, fakeCwd)
	return bashTmpRe.ReplaceAllString(s, "pi-bash-X.log")
}

// regenerate runs the cases through the real pi tools with node.
func regenerate(t *testing.T) []toolOutcome {
	dir, tmp, bin := t.TempDir(), t.TempDir(), t.TempDir()
	toolFixture(t, dir)
	// pi 0.73 passes --no-require-git, which Debian's fdfind 8.6 lacks.
	if fdfind, err := exec.LookPath("fdfind"); err == nil {
		script := "#!/bin/sh\nfor a; do shift; [ \"$a\" = --no-require-git ] || set -- \"$@\" \"$a\"; done\nexec " + fdfind + " \"$@\"\n"
		if err := os.WriteFile(filepath.Join(bin, "fd"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var in bytes.Buffer
	for _, c := range toolCases {
		fmt.Fprintf(&in, `{"tool":%q,"args":%s}`+"\n", c.tool, strings.ReplaceAll(c.args, "{CWD}", dir))
	}
	cmd := exec.Command("node", "testdata/oracle/tools.mjs", *piDist, dir)
	cmd.Dir, _ = os.Getwd()
	cmd.Stdin = &in
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "PI_OFFLINE=1", "PATH="+bin+":"+os.Getenv("PATH"), "HOME="+t.TempDir())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var res []toolOutcome
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<26)
	for i := 0; sc.Scan(); i++ {
		line := normalize(sc.Text(), dir, tmp)
		o := toolOutcome{Tool: toolCases[i].tool, Args: json.RawMessage(toolCases[i].args),
			Content: contentText(gjson.Get(line, "content")), IsError: gjson.Get(line, "isError").Bool()}
		if d := gjson.Get(line, "details"); d.Exists() {
			o.Details = json.RawMessage(d.Raw)
		}
		res = append(res, o)
	}
	if len(res) != len(toolCases) {
		t.Fatalf("node answered %d of %d cases", len(res), len(toolCases))
	}
	return res
}

// TestToolsGolden runs every case through the replay's tools on a fresh
// fixture, as each release whose oracle file is in testdata/oracle, and
// compares text, error flag and details byte for byte with what that
// release's real pi tools returned for the same calls.
func TestToolsGolden(t *testing.T) {
	if *piDist != "" {
		release := distRelease(t, *piDist)
		want := regenerate(t)
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		for _, o := range want {
			if err := enc.Encode(o); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(goldenTools(release), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(goldenTools("*"))
	if len(files) < 3 {
		t.Fatalf("oracle files %v: want the oldest, a middle and the newest tested release", files)
	}
	for _, f := range files {
		release := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "tools@"), ".golden")
		t.Run(release, func(t *testing.T) { checkTools(t, release, readOracle(t, f)) })
	}
}

// distRelease is the version of the package whose dist dir is given.
func distRelease(t *testing.T, dist string) string {
	data, err := os.ReadFile(filepath.Join(dist, "..", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	v := gjson.GetBytes(data, "version").Str
	if v == "" {
		t.Fatalf("%s/../package.json has no version", dist)
	}
	return v
}

func readOracle(t *testing.T, path string) []toolOutcome {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []toolOutcome
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var o toolOutcome
		if err := json.Unmarshal(line, &o); err != nil {
			t.Fatal(err)
		}
		want = append(want, o)
	}
	if len(want) != len(toolCases) {
		t.Fatalf("%s has %d cases, the test %d (rerun with -pi-dist)", path, len(want), len(toolCases))
	}
	return want
}

// checkTools replays every case as the session of a release recorded them.
func checkTools(t *testing.T, release string, want []toolOutcome) {
	ws := t.TempDir()
	toolFixture(t, ws)
	env := toolEnv(t, ws, fakeCwd)
	env.Version = release
	tmp := envValue(env.Env, "TMPDIR")
	sess, err := New().(trajectory.Replayer).NewToolSession(env)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	_, haveFd := lookAny("fd", "fdfind")
	_, haveRg := lookAny("rg")
	for i, c := range toolCases {
		w := want[i]
		call := &trajectory.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: c.tool, Arguments: json.RawMessage(strings.ReplaceAll(c.args, "{CWD}", fakeCwd))}
		if err := Format.CheckReplayable(call); err != nil {
			t.Errorf("case %d %s %s: not replayable: %v", i, c.tool, c.args, err)
			continue
		}
		f, err := sess.Execute(context.Background(), 1, call)
		if err != nil {
			t.Errorf("case %d %s %s: %v", i, c.tool, c.args, err)
			continue
		}
		if (c.tool == "find" && !haveFd) || (c.tool == "grep" && !haveRg) {
			continue // the fallbacks approximate fd and rg
		}
		got := normalize(f.Content, ws, tmp)
		gotDetails := normalize(string(f.Native), ws, tmp)
		if c.tool == "grep" && sameLines(got, w.Content) {
			got = w.Content // rg searches files in parallel: their order varies, for pi too
		}
		if c.tool == "find" && gjson.Get(c.args, "limit").Exists() && sameLimitedFind(t, ws, got, w.Content) {
			got = w.Content // fd --max-results keeps the first files its parallel walk meets, for pi too
		}
		if got != w.Content || f.IsError != w.IsError {
			t.Errorf("case %d %s %s: isError %v, want %v; text (-pi +replay):\n%s", i, c.tool, c.args, f.IsError, w.IsError, cmp.Diff(w.Content, got))
		}
		if gotDetails != string(w.Details) {
			t.Errorf("case %d %s %s: details (-pi +replay):\n%s", i, c.tool, c.args, cmp.Diff(string(w.Details), gotDetails))
		}
	}
}

func lookAny(names ...string) (string, bool) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, true
		}
	}
	return "", false
}

// sameLines reports whether a and b hold the same lines in any order.
func sameLines(a, b string) bool {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	slices.Sort(la)
	slices.Sort(lb)
	return slices.Equal(la, lb)
}

// sameLimitedFind reports whether a limited find found as many files as
// pi's, each an existing file of the fixture, with the same notice: which
// files fd stops at is up to its parallel walk.
func sameLimitedFind(t *testing.T, ws, got, want string) bool {
	t.Helper()
	gotList, gotNotice, ok1 := strings.Cut(got, "\n\n")
	wantList, wantNotice, ok2 := strings.Cut(want, "\n\n")
	if !ok1 || !ok2 || gotNotice != wantNotice {
		return false
	}
	files := strings.Split(gotList, "\n")
	if len(files) != len(strings.Split(wantList, "\n")) {
		return false
	}
	for _, f := range files {
		if st, err := os.Stat(filepath.Join(ws, f)); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}
