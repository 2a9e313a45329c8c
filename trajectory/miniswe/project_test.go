package miniswe

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
)

// TestProjection: what mini sends for the recorded messages. 1.x: role and
// content; 2.x: everything but extra, without null-valued keys, tool calls
// kept as saved.
func TestProjection(t *testing.T) {
	for _, tc := range []struct{ version, format string }{{"1.17.5", FormatV1}, {"2.4.6", FormatV11}} {
		t.Run(tc.version, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "recorded", tc.version, "last_mini_run.traj.json"))
			if err != nil {
				t.Fatal(err)
			}
			proj, err := Projection(bytes.NewReader(data), tc.format)
			if err != nil {
				t.Fatal(err)
			}
			msgs := gjson.GetBytes(data, "messages").Array()
			if len(proj) != len(msgs) {
				t.Fatalf("%d projected messages for %d", len(proj), len(msgs))
			}
			calls := 0
			for i, p := range proj {
				m := gjson.ParseBytes(p)
				if m.Get("role").Str != msgs[i].Get("role").Str || m.Get("content").Raw != msgs[i].Get("content").Raw {
					t.Errorf("message %d: role or content changed: %s", i, p)
				}
				m.ForEach(func(k, v gjson.Result) bool {
					switch {
					case k.Str == "extra" || v.Type == gjson.Null:
						t.Errorf("message %d keeps %s", i, k.Str)
					case tc.format == FormatV1 && k.Str != "role" && k.Str != "content":
						t.Errorf("message %d: 1.x sends role and content only, not %s", i, k.Str)
					}
					return true
				})
				if tc.format == FormatV11 && m.Get("tool_calls").Raw != msgs[i].Get("tool_calls").Raw && len(m.Get("tool_calls").Array()) != len(msgs[i].Get("tool_calls").Array()) {
					t.Errorf("message %d: tool calls changed", i)
				}
				calls += len(m.Get("tool_calls").Array())
			}
			if (tc.format == FormatV11) != (calls > 0) {
				t.Errorf("%d tool calls projected", calls)
			}
		})
	}
}
