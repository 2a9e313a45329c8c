package opencode

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// rebuildInputs are the sessions Rebuild is tested on: real exports and
// run-event streams, the corpus copies and this package's own files.
func rebuildInputs(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, rs := range recordedSessions {
		out[rs.name+"/export"] = readMaybeGz(t, rs.export)
		if rs.stdout != "" {
			out[rs.name+"/events"] = readMaybeGz(t, rs.stdout)
		}
	}
	for _, p := range corpus.Files(t) {
		if _, refused := corpus.Refused[filepath.Base(p)]; !refused {
			out[filepath.Base(p)] = readMaybeGz(t, p)
		}
	}
	return out
}

// originalFresh is what a replay returns when every tool behaves exactly as
// recorded: the recorded text, error flag, title and metadata.
func originalFresh(tr *trajectory.Trajectory, data []byte) map[string]trajectory.Fresh {
	states := map[string]gjson.Result{}
	if tr.Format == SubFormatExport {
		states = recordedStates(data)
	} else {
		for _, l := range bytes.Split(data, []byte("\n")) {
			if p := gjson.GetBytes(l, "part"); p.Get("type").Str == "tool" {
				states[p.Get("callID").Str] = p.Get("state")
			}
		}
	}
	out := map[string]trajectory.Fresh{}
	for _, a := range tr.Steps() {
		for _, c := range a.Calls {
			st := states[c.ID]
			var n jobj
			if ti := st.Get("title"); ti.Exists() {
				n = append(n, jkv{"title", ti.Str})
			}
			if m := st.Get("metadata"); m.Exists() {
				n = append(n, jkv{"metadata", jsonValue(m.Raw)})
			}
			f := trajectory.Fresh{Content: c.Observation.Content, IsError: c.Observation.IsError}
			if n != nil {
				f.Native = n.json()
			}
			out[c.ID] = f
		}
	}
	return out
}

func rebuild(t *testing.T, tr *trajectory.Trajectory, data []byte, n int, fresh map[string]trajectory.Fresh) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := New().(trajectory.Replayer).Rebuild(&out, bytes.NewReader(data), int64(len(data)), tr, n, fresh); err != nil {
		t.Fatalf("Rebuild(%d): %v", n, err)
	}
	return out.Bytes()
}

func decodeBytes(t *testing.T, b []byte) *trajectory.Trajectory {
	t.Helper()
	tr, err := New().Decode(bytes.NewReader(b), trajectory.Options{})
	if err != nil {
		t.Fatalf("rebuilt session does not decode: %v\n%s", err, b)
	}
	return tr
}

var ignoreLocators = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Locator" }, cmp.Ignore())

// With the recorded results as the fresh ones, an export rebuilds into
// exactly its prefix, and a run-event stream into an export whose steps are
// the stream's.
func TestRebuildIdentity(t *testing.T) {
	for name, data := range rebuildInputs(t) {
		t.Run(name, func(t *testing.T) {
			tr := decodeBytes(t, data)
			fresh := originalFresh(tr, data)
			for n := 1; n <= len(tr.Steps()); n++ {
				if trajectory.CheckBoundary(tr, n) != nil {
					continue
				}
				got := rebuild(t, tr, data, n, fresh)
				var prefix bytes.Buffer
				if err := New().WritePrefix(&prefix, bytes.NewReader(data), int64(len(data)), tr, n); err != nil {
					t.Fatal(err)
				}
				if tr.Format == SubFormatExport {
					if !bytes.Equal(got, prefix.Bytes()) {
						t.Fatalf("step %d: rebuilt export differs from the prefix:\n%s", n, cmp.Diff(prefix.String(), string(got)))
					}
					continue
				}
				if plain := rebuild(t, tr, data, n, nil); !bytes.Equal(got, plain) {
					t.Fatalf("step %d: recorded results changed the synthesized export:\n%s", n, cmp.Diff(string(plain), string(got)))
				}
				pt := decodeBytes(t, prefix.Bytes())
				rt := decodeBytes(t, got)
				if rt.Format != SubFormatExport || rt.SessionID != tr.SessionID || rt.Cwd != tr.Cwd {
					t.Errorf("synthesized export: format %s session %s cwd %q", rt.Format, rt.SessionID, rt.Cwd)
				}
				if d := cmp.Diff(pt.Actions, rt.Actions, ignoreLocators); d != "" {
					t.Fatalf("step %d: synthesized export has other actions (-events +export):\n%s", n, d)
				}
				checkImportShape(t, got)
			}
		})
	}
}

// checkImportShape checks the fields `opencode import` requires (its
// Session, UserMessage/AssistantMessage and Part schemas).
func checkImportShape(t *testing.T, doc []byte) {
	t.Helper()
	info := gjson.GetBytes(doc, "info")
	for _, k := range []string{"id", "slug", "directory", "title", "version", "time.created", "time.updated"} {
		if !info.Get(k).Exists() {
			t.Errorf("info.%s missing", k)
		}
	}
	gjson.GetBytes(doc, "messages").ForEach(func(_, m gjson.Result) bool {
		mi := m.Get("info")
		need := []string{"id", "sessionID", "role", "time.created", "agent"}
		if mi.Get("role").Str == "assistant" {
			need = append(need, "parentID", "modelID", "providerID", "mode", "path.cwd", "path.root", "cost",
				"tokens.input", "tokens.output", "tokens.reasoning", "tokens.cache.read", "tokens.cache.write")
		} else {
			need = append(need, "model.providerID", "model.modelID")
		}
		for _, k := range need {
			if !mi.Get(k).Exists() {
				t.Errorf("message %s: info.%s missing", mi.Get("id").Str, k)
			}
		}
		m.Get("parts").ForEach(func(_, p gjson.Result) bool {
			for _, k := range []string{"id", "sessionID", "messageID", "type"} {
				if !p.Get(k).Exists() {
					t.Errorf("part %s: %s missing", p.Get("id").Str, k)
				}
			}
			if p.Get("messageID").Str != mi.Get("id").Str {
				t.Errorf("part %s is in message %s but names %s", p.Get("id").Str, mi.Get("id").Str, p.Get("messageID").Str)
			}
			return true
		})
		return true
	})
}

// One changed observation changes exactly its own tool part; the session
// still decodes to the same steps, with the new result.
func TestRebuildOneChange(t *testing.T) {
	cases := []struct {
		name    string
		content string
		isError bool
		native  string
	}{
		{"new output", "a different output\n", false, `{"title":"t","metadata":{"output":"x","exit":1,"truncated":false}}`},
		{"now an error", "File not found: /x", true, ``},
		{"error with metadata", "NotFound: FileSystem.access (/x)", true, `{"metadata":{"output":""}}`},
	}
	for name, data := range rebuildInputs(t) {
		tr := decodeBytes(t, data)
		if len(tr.Steps()) == 0 || trajectory.CheckBoundary(tr, 1) != nil {
			continue
		}
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				n := len(tr.Steps())
				for trajectory.CheckBoundary(tr, n) != nil {
					n--
				}
				fresh := originalFresh(tr, data)
				target := &tr.Steps()[0].Calls[0]
				f := trajectory.Fresh{Content: tc.content, IsError: tc.isError}
				if tc.native != "" {
					f.Native = []byte(tc.native)
				}
				fresh[target.ID] = f
				same := rebuild(t, tr, data, n, originalFresh(tr, data))
				got := rebuild(t, tr, data, n, fresh)
				a, b := strings.Split(string(same), "\n"), strings.Split(string(got), "\n")
				if len(a) != len(b) {
					t.Fatalf("line count changed: %d → %d", len(a), len(b))
				}
				changed := 0
				for i := range a {
					if a[i] != b[i] {
						changed++
						if !strings.Contains(b[i], target.ID) {
							t.Errorf("line %d changed but does not hold call %s", i+1, target.ID)
						}
					}
				}
				if changed != 1 {
					t.Errorf("%d lines changed, want 1", changed)
				}
				rt := decodeBytes(t, got)
				if len(rt.Steps()) != n {
					t.Fatalf("rebuilt session has %d steps, want %d", len(rt.Steps()), n)
				}
				c := rt.Steps()[0].Calls[0]
				if c.ID != target.ID || c.Observation.Content != tc.content || c.Observation.IsError != tc.isError {
					t.Errorf("call %s: %q error=%v", c.ID, c.Observation.Content, c.Observation.IsError)
				}
				st := stateOf(got, target.ID)
				if tc.isError {
					if keys := objKeys(st); !hasPrefixKeys(keys, "status", "input", "error") || st.Get("output").Exists() || st.Get("title").Exists() {
						t.Errorf("error state has keys %v", keys)
					}
					if tc.native == "" && st.Get("metadata").Exists() {
						t.Errorf("error state keeps metadata %s", st.Get("metadata").Raw)
					}
				} else {
					// The title is the recorded one when there was one (it
					// names the input), else the fresh one.
					wantTitle := "t"
					if ot := stateOf(same, target.ID).Get("title"); ot.Exists() && !strings.HasPrefix(target.Name, "apply_patch") {
						wantTitle = ot.Str
					}
					if st.Get("metadata.exit").Int() != 1 || st.Get("title").Str != wantTitle {
						t.Errorf("state does not carry the fresh metadata and title %q: %s", wantTitle, st.Raw)
					}
				}
				if orig := stateOf(same, target.ID); orig.Get("time").Exists() && !st.Get("time.start").Exists() || !st.Get("input").IsObject() {
					t.Errorf("state lost its input or time: %s", st.Raw)
				}
				// Nothing else of the rebuilt session moved.
				if os.Getenv("PVISOR_DUMP") != "" {
					t.Logf("%s", got)
				}
			})
		}
	}
}

func stateOf(doc []byte, callID string) gjson.Result {
	var st gjson.Result
	gjson.GetBytes(doc, "messages").ForEach(func(_, m gjson.Result) bool {
		m.Get("parts").ForEach(func(_, p gjson.Result) bool {
			if p.Get("callID").Str == callID {
				st = p.Get("state")
				return false
			}
			return true
		})
		return !st.Exists()
	})
	return st
}

func objKeys(v gjson.Result) []string {
	var keys []string
	v.ForEach(func(k, _ gjson.Result) bool {
		keys = append(keys, k.Str)
		return true
	})
	return keys
}

// hasPrefixKeys reports whether keys starts with the given keys in order.
func hasPrefixKeys(keys []string, want ...string) bool {
	if len(keys) < len(want) {
		return false
	}
	for i, w := range want {
		if keys[i] != w {
			return false
		}
	}
	return true
}

func TestRebuildExt(t *testing.T) {
	x, ok := New().(interface {
		RebuildExt(*trajectory.Trajectory) string
	})
	if !ok || x.RebuildExt(&trajectory.Trajectory{Format: SubFormatRunEvents}) != "json" {
		t.Error("RebuildExt of run events is not json")
	}
}

// Synthesized ids sort before the assistant messages they precede.
func TestMintedIDs(t *testing.T) {
	if got := before("msg_2299288c1001Ijho40qdzDKBcw", "msg_"); got != "2299288c1000" {
		t.Errorf("before = %s", got)
	}
	if got := before("m1", "msg_"); got != "000000000000" {
		t.Errorf("before(m1) = %s", got)
	}
}

// A reused observation (no Native, the recorded text) keeps its state, so
// the engine's stale calls do not lose their metadata.
func TestRebuildStaleKeepsState(t *testing.T) {
	data := readMaybeGz(t, recordedSessions[0].export)
	tr := decodeBytes(t, data)
	fresh := map[string]trajectory.Fresh{}
	for _, a := range tr.Steps() {
		for _, c := range a.Calls {
			fresh[c.ID] = trajectory.Fresh{Content: c.Observation.Content, IsError: c.Observation.IsError}
		}
	}
	n := len(tr.Steps())
	var prefix bytes.Buffer
	if err := New().WritePrefix(&prefix, bytes.NewReader(data), int64(len(data)), tr, n); err != nil {
		t.Fatal(err)
	}
	if got := rebuild(t, tr, data, n, fresh); !bytes.Equal(got, prefix.Bytes()) {
		t.Errorf("stale results changed the session:\n%s", cmp.Diff(prefix.String(), string(got)))
	}
	// A new text without Native cannot keep stale metadata: it becomes {}.
	c := tr.Steps()[0].Calls[0]
	fresh[c.ID] = trajectory.Fresh{Content: "other"}
	if st := stateOf(rebuild(t, tr, data, n, fresh), c.ID); st.Get("metadata").Raw != "{}" || st.Get("output").Str != "other" {
		t.Errorf("state %s", st.Raw)
	}
}
