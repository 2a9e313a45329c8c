package opencode

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

const chatNonce = "__PVISOR_NATIVE_REPLAY_0123456789abcdef0123456789abcdef__"

func TestCleanExport(t *testing.T) {
	doc := `{"info":{"id":"ses_1"},"messages":[
 {"info":{"id":"m1","role":"user"},"parts":[{"type":"text","text":"task"}]},
 {"info":{"id":"m2","role":"assistant","parentID":"m1"},"parts":[{"type":"tool","state":{"status":"completed"}}]},
 {"info":{"id":"m3","role":"user"},"parts":[{"type":"text","text":"` + chatNonce + `"}]},
 {"info":{"id":"m4","role":"assistant","parentID":"m3"},"parts":[{"type":"text","text":"go"}]},
 {"info":{"id":"m5","role":"assistant","parentID":"m3"},"parts":[]}
]}`
	clean, removed, err := cleanExport([]byte(doc), chatNonce)
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
	if _, _, err := cleanExport([]byte(quoted), chatNonce); err != nil {
		t.Errorf("quoted nonce: %v", err)
	}
	for name, bad := range map[string]string{
		"no nonce":   strings.Replace(doc, chatNonce, "hello", 1),
		"stray":      strings.Replace(doc, `"text":"go"`, `"text":"`+chatNonce+` go"`, 1),
		"twice":      strings.Replace(doc, `"text":"task"`, `"text":"`+chatNonce+`"`, 1),
		"no message": `{"info":{"id":"ses_1"}}`,
	} {
		if _, _, err := cleanExport([]byte(bad), chatNonce); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestSessionModel(t *testing.T) {
	for doc, want := range map[string]string{
		`{"messages":[{"info":{"role":"user","model":{"providerID":"p","modelID":"m"}}},{"info":{"role":"assistant","providerID":"q","modelID":"n"}}]}`: "q/n",
		`{"messages":[{"info":{"role":"user","model":{"providerID":"p","modelID":"m"}}}]}`:                                                              "p/m",
		`{"info":{"model":{"providerID":"x","id":"y"}},"messages":[]}`:                                                                                  "x/y",
	} {
		p, m := sessionModel([]byte(doc))
		if p+"/"+m != want {
			t.Errorf("%s: %s/%s, want %s", doc, p, m, want)
		}
	}
}

// Issue 24 #15: a CLI's coloured error reaches the failure message as text.
func TestClipOut(t *testing.T) {
	if got := clipOut([]byte("\x1b[31mboom\x1b[0m\n")); got != "boom" {
		t.Errorf("clipOut = %q", got)
	}
}
