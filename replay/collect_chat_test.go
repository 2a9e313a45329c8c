package replay

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

const chatNonce = "__PVISOR_NATIVE_REPLAY_0123456789abcdef0123456789abcdef__"

func TestCleanOpenCodeExport(t *testing.T) {
	doc := `{"info":{"id":"ses_1"},"messages":[
 {"info":{"id":"m1","role":"user"},"parts":[{"type":"text","text":"task"}]},
 {"info":{"id":"m2","role":"assistant","parentID":"m1"},"parts":[{"type":"tool","state":{"status":"completed"}}]},
 {"info":{"id":"m3","role":"user"},"parts":[{"type":"text","text":"` + chatNonce + `"}]},
 {"info":{"id":"m4","role":"assistant","parentID":"m3"},"parts":[{"type":"text","text":"go"}]},
 {"info":{"id":"m5","role":"assistant","parentID":"m3"},"parts":[]}
]}`
	clean, removed, err := cleanOpenCodeExport([]byte(doc), chatNonce)
	if err != nil {
		t.Fatal(err)
	}
	ids := gjson.GetBytes(clean, "messages.#.info.id").String()
	parents := gjson.GetBytes(clean, "messages.#.info.parentID").String()
	if ids != `["m1","m2","m4","m5"]` || parents != `["m1","m1","m1"]` {
		t.Errorf("ids %s parents %s", ids, parents)
	}
	if removed[0]["message"] != "m3" || removed[0]["relinked_messages"] != 2 {
		t.Errorf("removed %v", removed)
	}
	// The quoted form opencode uses for prompts with spaces is removed too.
	quoted := strings.Replace(doc, `"text":"`+chatNonce+`"`, `"text":"\"`+chatNonce+`\""`, 1)
	if _, _, err := cleanOpenCodeExport([]byte(quoted), chatNonce); err != nil {
		t.Errorf("quoted nonce: %v", err)
	}
	for name, bad := range map[string]string{
		"no nonce":   strings.Replace(doc, chatNonce, "hello", 1),
		"stray":      strings.Replace(doc, `"text":"go"`, `"text":"`+chatNonce+` go"`, 1),
		"twice":      strings.Replace(doc, `"text":"task"`, `"text":"`+chatNonce+`"`, 1),
		"no message": `{"info":{"id":"ses_1"}}`,
	} {
		if _, _, err := cleanOpenCodeExport([]byte(bad), chatNonce); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestCleanPiSession(t *testing.T) {
	lines := []string{
		`{"type":"session","version":3,"id":"s","cwd":"/w"}`,
		`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"task"}]}}`,
		`{"type":"message","id":"b","parentId":"a","message":{"role":"toolResult","toolCallId":"c","content":[]}}`,
		`{"type":"message","id":"n","parentId":"b","message":{"role":"user","content":[{"type":"text","text":"` + chatNonce + `"}]}}`,
		`{"type":"message","id":"d","parentId":"n","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}`,
	}
	data := strings.Join(lines, "\n") + "\n"
	clean, removed, err := cleanPiSession([]byte(data), chatNonce, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{lines[0], lines[1], lines[2],
		`{"type":"message","id":"d","parentId":"b","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}`}, "\n") + "\n"
	if d := cmp.Diff(want, string(clean)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if removed[0]["entry"] != "n" || removed[0]["relinked_children"] != 1 {
		t.Errorf("removed %v", removed)
	}
	// A nonce inside the staged prefix is not the resume's.
	if _, _, err := cleanPiSession([]byte(data), chatNonce, 4); err == nil {
		t.Error("a nonce in the prefix was removed")
	}
	stray := data + `{"type":"message","id":"e","parentId":"d","message":{"role":"assistant","content":[{"type":"text","text":"` + chatNonce + `"}]}}` + "\n"
	if _, _, err := cleanPiSession([]byte(stray), chatNonce, 3); err == nil {
		t.Error("a stray nonce was kept")
	}
}

func TestUsedPiTools(t *testing.T) {
	c := &Continuation{Plan: &Plan{Trajectory: &trajectory.Trajectory{Actions: []trajectory.Action{
		{Calls: []trajectory.ToolCall{{Name: "ls"}, {Name: "find"}}}, {Calls: []trajectory.ToolCall{{Name: "custom_x"}}}}}}}
	if got := usedPiTools(c); !cmp.Equal(got, []string{"read", "bash", "edit", "write", "find", "ls"}) {
		t.Errorf("usedPiTools = %v", got)
	}
}

func TestOpenCodeModel(t *testing.T) {
	for doc, want := range map[string]string{
		`{"messages":[{"info":{"role":"user","model":{"providerID":"p","modelID":"m"}}},{"info":{"role":"assistant","providerID":"q","modelID":"n"}}]}`: "q/n",
		`{"messages":[{"info":{"role":"user","model":{"providerID":"p","modelID":"m"}}}]}`:                                                              "p/m",
		`{"info":{"model":{"providerID":"x","id":"y"}},"messages":[]}`:                                                                                  "x/y",
	} {
		p, m := opencodeModel([]byte(doc))
		if p+"/"+m != want {
			t.Errorf("%s: %s/%s, want %s", doc, p, m, want)
		}
	}
}
