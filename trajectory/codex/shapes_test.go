package codex

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// rolloutFiles are every real rollout the package has: the corpus, the
// lab recording and the e2e recording.
func rolloutFiles(t *testing.T) []string {
	files := corpusFiles(t)
	lab, _ := filepath.Glob(filepath.Join("testdata", "replay", "*.jsonl"))
	e2e, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "e2e", "sessions", "codex@0.171.0", "rollout-*.jsonl"))
	return append(append(files, lab...), e2e...)
}

// TestSerdeStringMatchesCodex re-encodes every string output of every
// rollout: serdeString must give back the bytes codex-rs wrote.
func TestSerdeStringMatchesCodex(t *testing.T) {
	n := 0
	for _, path := range rolloutFiles(t) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			out := gjson.GetBytes(sc.Bytes(), "payload.output")
			if out.Type != gjson.String || !strings.HasSuffix(gjson.GetBytes(sc.Bytes(), "payload.type").Str, "_output") {
				continue
			}
			n++
			if got := serdeString(out.Str); got != out.Raw {
				t.Errorf("%s: re-encoded output differs from the recorded bytes\n got %.200q\nwant %.200q", filepath.Base(path), got, out.Raw)
			}
			// JSON-in-a-string outputs (0.40 exec, 0.12x apply_patch).
			if in := gjson.Get(out.Str, "output"); strings.HasPrefix(out.Str, `{"output":`) && in.Type == gjson.String {
				if got := serdeString(in.Str); got != in.Raw {
					t.Errorf("%s: inner output re-encodes differently", filepath.Base(path))
				}
				if d := gjson.Get(out.Str, "metadata.duration_seconds"); d.Exists() {
					if got := serdeF32(float32(d.Float())); got != d.Raw {
						t.Errorf("%s: duration %s re-encodes as %s", filepath.Base(path), d.Raw, got)
					}
				}
			}
		}
		f.Close()
	}
	if n < 400 {
		t.Fatalf("only %d outputs checked", n)
	}
}

func TestSerdeString(t *testing.T) {
	for in, want := range map[string]string{
		"a\"b\\c":         `"a\"b\\c"`,
		"\n\r\t\b\f":      `"\n\r\t\b\f"`,
		"\x00\x1f\x7f":    `"\u0000\u001f` + "\x7f\"",
		"<a>&\u2028é":     "\"<a>&\u2028é\"",
		"…3 tokens trunc": `"…3 tokens trunc"`,
	} {
		if got := serdeString(in); got != want {
			t.Errorf("serdeString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestLossyUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"plain":               "plain",
		"a\xffb":              "a\uFFFDb",
		"caf\xc3":             "caf\uFFFD",
		"\xe2\x82x":           "\uFFFDx", // truncated 3-byte sequence: one replacement
		"\xed\xa0\x80":        "\uFFFD\uFFFD\uFFFD",
		"\xf0\x9f\x98":        "\uFFFD",
		"ok \xf0\x9f\x98\x80": "ok \U0001F600",
	} {
		if got := lossyUTF8([]byte(in)); got != want {
			t.Errorf("lossyUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		d              time.Duration
		display, serde string
	}{
		{0, "0", "0.0"},
		{40 * time.Millisecond, "0", "0.0"},
		{50 * time.Millisecond, "0.1", "0.1"},
		{2249 * time.Millisecond, "2.2", "2.2"},
		{2800 * time.Millisecond, "2.8", "2.8"},
		{12 * time.Second, "12", "12.0"},
	} {
		v := durationSeconds(tc.d)
		if got := rustF32Display(v); got != tc.display {
			t.Errorf("%v: display %q, want %q", tc.d, got, tc.display)
		}
		if got := serdeF32(v); got != tc.serde {
			t.Errorf("%v: serde %q, want %q", tc.d, got, tc.serde)
		}
	}
	if got := approxTokens(168894); got != 42224 {
		t.Errorf("approxTokens = %d", got)
	}
}

func TestTruncation(t *testing.T) {
	if got := truncateTokens("héllo wörld", 2); got != "hél…2 tokens truncated…rld" {
		t.Errorf("truncateTokens on characters: %q", got)
	}
	if got := truncateTokens("abc", 0); got != "…1 tokens truncated…" {
		t.Errorf("zero budget: %q", got)
	}
	for s, n := range map[string]int{"": 0, "a": 1, "a\n": 1, "a\nb": 2, "a\r\nb\n\n": 3} {
		if got := lineCount(s); got != n {
			t.Errorf("lineCount(%q) = %d, want %d", s, got, n)
		}
	}
	// Few lines but over 10 KiB: 0.40 still writes the omitted marker,
	// "omitted 0 of N lines" (agentcmd 0.40 has four of them).
	long := strings.Repeat(strings.Repeat("x", 99)+"\n", 200)
	got := truncateLegacy(long)
	if len(got) != legacyMaxBytes || !strings.Contains(got, "\n[... omitted 0 of 200 lines ...]\n\n") {
		t.Errorf("truncateLegacy: %d bytes, marker missing in %.80q", len(got), got[5100:])
	}
	// All lines fit in the head: nothing after the marker (0.40's "omitted
	// 0 of 84 lines" output is 5154 bytes).
	if got := truncateLegacy(strings.Repeat(strings.Repeat("y", 130)+"\n", 84)); len(got) != 5154 {
		t.Errorf("84 long lines: %d bytes, want 5154", len(got))
	}
	if s := "short\n"; truncateLegacy(s) != s {
		t.Error("short output was cut")
	}
}

func TestEras(t *testing.T) {
	for v, want := range map[string]era{
		"0.40.0": eraLegacy, "0.46.0": eraMiddle, "0.125.0": eraMiddle, "0.128.0-alpha.1": eraMiddle,
		"0.171.0": eraCurrent, "1.2.0": eraCurrent, "": eraUnknown, "dev": eraUnknown,
	} {
		if got := eraFor(v); got != want {
			t.Errorf("eraFor(%q) = %d, want %d", v, got, want)
		}
	}
}
