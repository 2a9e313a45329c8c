package codex

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// replayable lists the rollouts that decode, with their bytes.
func replayable(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, path := range rolloutFiles(t) {
		if _, bad := refused[filepath.Base(path)]; bad {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if tr, err := decodeBytes(t, data); err != nil || len(tr.Steps()) == 0 {
			continue // a fixture with no complete step has nothing to rebuild
		}
		out[path] = data
	}
	return out
}

func freshFrom(tr *trajectory.Trajectory) map[string]trajectory.Fresh {
	fresh := map[string]trajectory.Fresh{}
	for _, a := range tr.Steps() {
		for _, c := range a.Calls {
			fresh[c.ID] = trajectory.Fresh{Content: c.Observation.Content, IsError: c.Observation.IsError}
		}
	}
	return fresh
}

func rebuild(t *testing.T, data []byte, tr *trajectory.Trajectory, n int, fresh map[string]trajectory.Fresh) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := New().(trajectory.Replayer).Rebuild(&b, bytes.NewReader(data), int64(len(data)), tr, n, fresh); err != nil {
		t.Fatalf("rebuild after step %d: %v", n, err)
	}
	return b.Bytes()
}

func boundaries(tr *trajectory.Trajectory) []int {
	n := len(tr.Steps())
	return []int{1, (n + 1) / 2, n}
}

// TestRebuildIdentity: with every fresh result equal to the recorded one
// the rebuilt session is the prefix, byte for byte; also when the decode
// was lean and the content has to be read back from the record.
func TestRebuildIdentity(t *testing.T) {
	for path, data := range replayable(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr, err := decodeBytes(t, data)
			if err != nil {
				t.Fatal(err)
			}
			lean, err := New().Decode(bytes.NewReader(data), trajectory.Options{SkipObservationContent: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range boundaries(tr) {
				var want bytes.Buffer
				if err := New().WritePrefix(&want, bytes.NewReader(data), int64(len(data)), tr, n); err != nil {
					t.Fatal(err)
				}
				if got := rebuild(t, data, tr, n, freshFrom(tr)); !bytes.Equal(got, want.Bytes()) {
					t.Errorf("after step %d: rebuilt session differs from the prefix", n)
				}
				if got := rebuild(t, data, lean, n, freshFrom(tr)); !bytes.Equal(got, want.Bytes()) {
					t.Errorf("after step %d (lean decode): rebuilt session differs from the prefix", n)
				}
			}
		})
	}
}

// TestRebuildOneChange changes the result of one call of each boundary
// step: exactly its record differs, only in payload.output, and the
// rebuilt session decodes to the same steps with the new content.
func TestRebuildOneChange(t *testing.T) {
	const repl = "changed \"result\"\n\tline <2> \u2028 é\x01"
	for path, data := range replayable(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr, err := decodeBytes(t, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range boundaries(tr) {
				a, _ := tr.Step(n)
				target := &a.Calls[len(a.Calls)-1]
				fresh := freshFrom(tr)
				fresh[target.ID] = trajectory.Fresh{Content: repl, IsError: true}
				got := rebuild(t, data, tr, n, fresh)
				var prefix bytes.Buffer
				_ = New().WritePrefix(&prefix, bytes.NewReader(data), int64(len(data)), tr, n)
				gl := strings.SplitAfter(string(got), "\n")
				wl := strings.SplitAfter(prefix.String(), "\n")
				if len(gl) != len(wl) {
					t.Fatalf("after step %d: %d lines, prefix has %d", n, len(gl), len(wl))
				}
				for i := range gl {
					changed := i+1 == target.Observation.Locator.First
					if (gl[i] != wl[i]) != changed {
						t.Errorf("after step %d: line %d changed=%v, want %v", n, i+1, gl[i] != wl[i], changed)
					}
					if changed {
						_, at, _ := outputRange([]byte(wl[i]))
						_, at2, _ := outputRange([]byte(gl[i]))
						if wl[i][:at[0]] != gl[i][:at2[0]] || wl[i][at[1]:] != gl[i][at2[1]:] {
							t.Errorf("after step %d: bytes around payload.output changed", n)
						}
					}
				}
				back, err := decodeBytes(t, got)
				if err != nil {
					t.Fatalf("after step %d: rebuilt session does not decode: %v", n, err)
				}
				if d := cmp.Diff(shape(tr, n), shape(back, n)); d != "" {
					t.Errorf("after step %d: steps differ (-original +rebuilt):\n%s", n, d)
				}
				c := back.Actions[tr.ActionIndex(n)].Calls[len(a.Calls)-1]
				if c.Observation.Content != repl {
					t.Errorf("after step %d: rebuilt result %q, want %q", n, c.Observation.Content, repl)
				}
			}
		})
	}
}

// shape is the step structure of the first n steps: call ids, names and
// record lines.
func shape(tr *trajectory.Trajectory, n int) []string {
	var out []string
	for _, a := range tr.Steps() {
		if a.Step > n {
			break
		}
		for _, c := range a.Calls {
			out = append(out, strings.Join([]string{c.ID, c.Name, c.Locator.String(), c.Observation.Locator.String()}, " "))
		}
	}
	return out
}

// TestOutputRepresentations: content-item arrays and objects keep their
// shape (0.146/0.129 fixtures record both).
func TestOutputRepresentations(t *testing.T) {
	for _, tc := range []struct{ old, want string }{
		{`"old"`, `"new\n"`},
		{`[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:x","detail":"auto"},{"type":"input_text","text":"b"}]`,
			`[{"type":"input_text","text":"new\n"},{"type":"input_image","image_url":"data:x","detail":"auto"}]`},
		{`[{"type":"input_image","image_url":"data:x"}]`, `[{"type":"input_text","text":"new\n"},{"type":"input_image","image_url":"data:x"}]`},
		{`{"type":"input_text","text":"a.txt\n","detail":null,"image_url":null}`, `{"type":"input_text","text":"new\n","detail":null,"image_url":null}`},
		{`{"content":"x","success":false}`, `{"content":"new\n","success":false}`},
		{`null`, `"new\n"`},
	} {
		if got := newOutputValue(tc.old, "new\n"); got != tc.want {
			t.Errorf("newOutputValue(%s) = %s, want %s", tc.old, got, tc.want)
		}
	}
	line := `{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"a\"}b","extra":1},"metadata":{"output":"keep"}}` + "\n"
	got, err := replaceOutput([]byte(line), "z")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"z","extra":1},"metadata":{"output":"keep"}}` + "\n"
	if string(got) != want {
		t.Errorf("replaceOutput:\n got %s\nwant %s", got, want)
	}
}

func TestRebuildMissingFresh(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "replay", "lab-0.171-rollout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := decodeBytes(t, data)
	if err != nil {
		t.Fatal(err)
	}
	err = New().(trajectory.Replayer).Rebuild(&bytes.Buffer{}, bytes.NewReader(data), int64(len(data)), tr, 2, map[string]trajectory.Fresh{})
	if err == nil || !strings.Contains(err.Error(), "no fresh result") {
		t.Errorf("got %v, want a missing-result error", err)
	}
}

// FuzzReplaceOutput: any result text spliced into a record leaves valid
// JSON whose payload.output reads back as that text.
func FuzzReplaceOutput(f *testing.F) {
	f.Add(`"old"`, "new")
	f.Add(`[{"type":"input_text","text":"a"}]`, "x\n\"y\"\u2028")
	f.Add(`{"content":"x","success":false}`, "\x00\x1f")
	f.Fuzz(func(t *testing.T, old, content string) {
		if !gjson.Valid(old) || !utf8.ValidString(content) {
			return
		}
		line := `{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":` + old + `}}` + "\n"
		got, err := replaceOutput([]byte(line), content)
		if err != nil {
			t.Fatal(err)
		}
		if !gjson.ValidBytes(bytes.TrimSpace(got)) {
			t.Fatalf("invalid JSON: %s", got)
		}
		if back, _ := outputContent(gjson.GetBytes(got, "payload.output")); back != content {
			t.Fatalf("read back %q, want %q (line %s)", back, content, got)
		}
	})
}
