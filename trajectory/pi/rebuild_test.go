package pi

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

// sessionFiles are the session-file inputs (v1 and v3, trees included)
// that have steps.
func sessionFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range corpus.Files(t) {
		if _, refused := corpus.Refused[filepath.Base(p)]; refused {
			continue
		}
		_, tr := formattest.DecodeFile(t, New(), p)
		if tr.Format == SubFormatEvents || len(tr.Steps()) == 0 {
			continue
		}
		out = append(out, p)
	}
	e2e, _ := filepath.Glob(filepath.Join(e2eDirs, "*_*.jsonl"))
	out = append(out, e2e...)
	if len(out) < 3 {
		t.Fatalf("only %d session files with steps", len(out))
	}
	return out
}

// recorded is the Fresh map that says "nothing changed": each call's
// recorded text, as the engine passes it for reused observations.
func recorded(tr *trajectory.Trajectory, after int) map[string]trajectory.Fresh {
	fresh := map[string]trajectory.Fresh{}
	for _, a := range tr.Steps() {
		if a.Step > after {
			break
		}
		for _, c := range a.Calls {
			fresh[c.ID] = trajectory.Fresh{Content: c.Observation.Content, IsError: c.Observation.IsError, Reused: true}
		}
	}
	return fresh
}

func rebuild(t *testing.T, data []byte, tr *trajectory.Trajectory, after int, fresh map[string]trajectory.Fresh) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Format.(trajectory.Replayer).Rebuild(&b, bytes.NewReader(data), int64(len(data)), tr, after, fresh); err != nil {
		t.Fatalf("Rebuild after step %d: %v", after, err)
	}
	return b.Bytes()
}

func prefix(t *testing.T, data []byte, tr *trajectory.Trajectory, after int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Format.WritePrefix(&b, bytes.NewReader(data), int64(len(data)), tr, after); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestRebuildUnchanged: with every observation as recorded, the rebuilt
// session is the prefix byte for byte, at every boundary.
func TestRebuildUnchanged(t *testing.T) {
	for _, p := range sessionFiles(t) {
		t.Run(filepath.Base(p), func(t *testing.T) {
			data, tr := formattest.DecodeFile(t, New(), p)
			for after := 1; after <= len(tr.Steps()); after++ {
				if trajectory.CheckBoundary(tr, after) != nil {
					continue
				}
				got, want := rebuild(t, data, tr, after, recorded(tr, after)), prefix(t, data, tr, after)
				if !bytes.Equal(got, want) {
					t.Fatalf("after step %d: rebuilt session differs from the prefix:\n%s", after, cmp.Diff(string(want), string(got)))
				}
			}
		})
	}
}

// TestRebuildOneChanged: a changed observation rewrites exactly its own
// entry (content, details, isError), which still decodes to the same
// steps with the new text.
func TestRebuildOneChanged(t *testing.T) {
	for _, p := range sessionFiles(t) {
		t.Run(filepath.Base(p), func(t *testing.T) {
			data, tr := formattest.DecodeFile(t, New(), p)
			after := len(tr.Steps())
			for after > 1 && trajectory.CheckBoundary(tr, after) != nil {
				after--
			}
			steps := tr.Steps()[:after]
			// Change the first call of every third step, alternating the
			// shapes: details added, details removed, an error.
			fresh := recorded(tr, after)
			changed := map[string]trajectory.Fresh{}
			for i := 0; i < len(steps); i += 3 {
				c := steps[i].Calls[0]
				f := trajectory.Fresh{Content: "fresh \"text\" <&> \u2028 of " + c.ID + "\n\ttab", Duration: time.Millisecond, LogPath: "/x.log"}
				switch i % 9 {
				case 0:
					f.Native = json.RawMessage(`{"diff":"-1 a\n+1 b","firstChangedLine":1}`)
				case 3:
					f.Native = nil
				case 6:
					f.IsError, f.Native = true, json.RawMessage(`{}`)
				}
				fresh[c.ID], changed[c.ID] = f, f
			}
			got := rebuild(t, data, tr, after, fresh)
			want := prefix(t, data, tr, after)
			gl, wl := strings.SplitAfter(string(got), "\n"), strings.SplitAfter(string(want), "\n")
			if len(gl) != len(wl) {
				t.Fatalf("rebuilt session has %d lines, the prefix %d", len(gl), len(wl))
			}
			diffLines := 0
			for i := range gl {
				if gl[i] == wl[i] {
					continue
				}
				diffLines++
				g, w := gjson.Parse(gl[i]), gjson.Parse(wl[i])
				id := w.Get("message.toolCallId").Str
				f, ok := changed[id]
				if !ok {
					t.Fatalf("line %d changed but holds no changed result:\n%s", i+1, gl[i])
				}
				if !gjson.Valid(gl[i]) {
					t.Fatalf("line %d is not valid JSON: %s", i+1, gl[i])
				}
				// Everything but content/details/isError is untouched.
				for _, k := range []string{"type", "id", "parentId", "timestamp", "message.role", "message.toolCallId", "message.toolName", "message.timestamp"} {
					if g.Get(k).Raw != w.Get(k).Raw {
						t.Errorf("line %d: %s changed from %s to %s", i+1, k, w.Get(k).Raw, g.Get(k).Raw)
					}
				}
				if d := g.Get("message.details"); (f.Native == nil) == d.Exists() || (f.Native != nil && d.Raw != string(f.Native)) {
					t.Errorf("line %d: details %s, want %s", i+1, d.Raw, f.Native)
				}
				if g.Get("message.isError").Bool() != f.IsError {
					t.Errorf("line %d: isError not replaced", i+1)
				}
				keys := []string{}
				g.Get("message").ForEach(func(k, _ gjson.Result) bool { keys = append(keys, k.Str); return true })
				if ci, ei := indexOf(keys, "content"), indexOf(keys, "isError"); ci < 0 || ei < ci {
					t.Errorf("line %d: keys out of pi's order: %v", i+1, keys)
				} else if di := indexOf(keys, "details"); di >= 0 && (di < ci || di > ei) {
					t.Errorf("line %d: details not between content and isError: %v", i+1, keys)
				}
			}
			if diffLines != len(changed) {
				t.Errorf("%d lines changed, want %d", diffLines, len(changed))
			}
			tr2, err := New().Decode(bytes.NewReader(got), trajectory.Options{})
			if err != nil {
				t.Fatalf("rebuilt session does not decode: %v", err)
			}
			s2 := tr2.Steps()
			if len(s2) != after {
				t.Fatalf("rebuilt session has %d steps, want %d", len(s2), after)
			}
			for i, a := range steps {
				for j, c := range a.Calls {
					c2 := s2[i].Calls[j]
					want, isErr := c.Observation.Content, c.Observation.IsError
					if f, ok := changed[c.ID]; ok {
						want, isErr = f.Content, f.IsError
					}
					if c2.ID != c.ID || c2.Observation.Content != want || c2.Observation.IsError != isErr {
						t.Errorf("step %d call %s: decoded %q (error %v), want %q (error %v)", a.Step, c.ID,
							clip(c2.Observation.Content), c2.Observation.IsError, clip(want), isErr)
					}
				}
			}
		})
	}
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

// TestRebuildShapes pins the exact bytes of a rewritten entry: details
// inserted between content and isError, removed, or replaced.
func TestRebuildShapes(t *testing.T) {
	const head = `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"x"}}],"stopReason":"toolUse","timestamp":1}}` + "\n"
	cases := []struct {
		name, result string
		fresh        trajectory.Fresh
		want         string
	}{
		{"insert details",
			`{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"old"}],"isError":false,"timestamp":2}`,
			trajectory.Fresh{Content: "new\n", Duration: 1, Native: json.RawMessage(`{"truncation":{"content":"x"}}`)},
			`{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"new\n"}],"details":{"truncation":{"content":"x"}},"isError":false,"timestamp":2}`},
		{"remove details",
			`{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"old"}],"details":{"diff":"x"},"isError":true,"timestamp":2}`,
			trajectory.Fresh{Content: "<ok> \u2028 \x01", Duration: 1},
			`{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"<ok> ` + "\u2028" + ` \u0001"}],"isError":false,"timestamp":2}`},
		{"error details",
			`{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"details":{"diff":"x"},"isError":false,"timestamp":2}`,
			trajectory.Fresh{Content: "ENOENT", IsError: true, Duration: 1, Native: json.RawMessage(`{}`)},
			`{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"ENOENT"}],"details":{},"isError":true,"timestamp":2}`},
		{"image kept",
			`{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"Read image file [image/png]"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"isError":false,"timestamp":2}`,
			trajectory.Fresh{Content: "Read image file [image/png]", Duration: 1},
			`{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"Read image file [image/png]"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"isError":false,"timestamp":2}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			entry := func(m string) string {
				return `{"type":"message","id":"r1","parentId":"a1","timestamp":"t2","message":` + m + "}\n"
			}
			data := []byte(head + entry(c.result))
			tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := rebuild(t, data, tr, 1, map[string]trajectory.Fresh{"c1": c.fresh})
			if d := cmp.Diff(head+entry(c.want), string(got)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestRebuildEventStream: --mode json output cannot be continued.
func TestRebuildEventStream(t *testing.T) {
	data, tr := formattest.DecodeFile(t, New(), "testdata/mode_json_parallel.jsonl")
	var b bytes.Buffer
	err := Format.(trajectory.Replayer).Rebuild(&b, bytes.NewReader(data), int64(len(data)), tr, 1, recorded(tr, 1))
	if err == nil || !trajectory.IsUnsupported(err) || !strings.Contains(err.Error(), "session file") {
		t.Fatalf("Rebuild of an event stream: %v, want an Unsupported error asking for the session file", err)
	}
}
