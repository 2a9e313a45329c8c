package translate

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestMessagesToChatGolden translates every testdata/requests/*.json and compares
// with its .chat.golden (indented for review; the wire form is compact).
func TestMessagesToChatGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/requests/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no request fixtures: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			out, err := MessagesToChat(body, "qwen3-coder")
			if err != nil {
				t.Fatalf("MessagesToChat: %v", err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, out, "", "  "); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			pretty.WriteByte('\n')
			golden := strings.TrimSuffix(in, ".json") + ".chat.golden"
			if *update {
				if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if d := cmp.Diff(string(want), pretty.String()); d != "" {
				t.Errorf("translation differs from %s (-want +got):\n%s", golden, d)
			}
		})
	}
}

func TestMessagesToChatModel(t *testing.T) {
	body := []byte(`{"model":"claude-x","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`)
	for _, tc := range []struct{ model, want string }{{"served", "served"}, {"", "claude-x"}} {
		out, err := MessagesToChat(body, tc.model)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Model         string `json:"model"`
			StreamOptions any    `json:"stream_options"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if got.Model != tc.want || got.StreamOptions != nil {
			t.Errorf("model %q: got %+v, want model %q and no stream_options", tc.model, got, tc.want)
		}
	}
}

func TestMessagesToChatRefuses(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"not json", `{`, "not an Anthropic Messages JSON object"},
		{"image", `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]}`,
			`messages[0].content[0] is a "image" block`},
		{"image in tool result", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image"}]}]}]}`,
			`messages[0].content[0][0] is a "image" block`},
		{"document", `{"messages":[{"role":"user","content":[{"type":"document"}]}]}`, `"document" block`},
		{"server tool use", `{"messages":[{"role":"assistant","content":[{"type":"server_tool_use","id":"s","name":"web_search"}]}]}`, `"server_tool_use" block`},
		{"untyped block", `{"messages":[{"role":"user","content":[{"text":"x"}]}]}`, "without a type"},
		{"system image", `{"system":[{"type":"image"}],"messages":[]}`, `system[0] is a "image" block`},
		{"bad role", `{"messages":[{"role":"tool","content":"x"}]}`, `role "tool"`},
		{"content number", `{"messages":[{"role":"user","content":3}]}`, "neither a string nor an array"},
		{"tool_use without id", `{"messages":[{"role":"assistant","content":[{"type":"tool_use","name":"x","input":{}}]}]}`, "without id or name"},
		{"tool_result without id", `{"messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`, "without tool_use_id"},
		{"tool without name", `{"tools":[{"input_schema":{}}],"messages":[]}`, "tools[0] has no name"},
		{"tool choice unknown", `{"tool_choice":{"type":"maybe"},"messages":[]}`, `tool_choice type "maybe"`},
		{"tool choice tool without name", `{"tool_choice":{"type":"tool"},"messages":[]}`, "has no name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := MessagesToChat([]byte(tc.body), "m")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func FuzzMessagesToChat(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/requests/*.json")
	for _, in := range inputs {
		b, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":null}]}]}`))
	f.Add([]byte(`{"system":"s","messages":[{"role":"assistant","content":"x"}],"tool_choice":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := MessagesToChat(body, "m")
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON for %q: %s", body, out)
		}
	})
}
