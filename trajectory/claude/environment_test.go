package claude

import (
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestRelocateEnvironment: the OS version a Claude Code session recorded
// (snapshot and rendered text) becomes this machine's; nothing else moves.
func TestRelocateEnvironment(t *testing.T) {
	data, err := os.ReadFile("../../testdata/e2e/sessions/claude-code@2.1.332/d0465159-22d9-4f2c-b1b3-3d55774e8b6c.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var env []byte
	for _, l := range strings.Split(string(data), "\n") {
		if gjson.Get(l, "attachment.type").Str == "environment" {
			env = []byte(l)
			break
		}
	}
	if env == nil {
		t.Fatal("the recording holds no environment attachment")
	}
	const host = "Linux 7.0.0-test \"quoted\""
	out, from := RelocateEnvironment(env, host)
	if from != "Linux 6.18.44-fc-v1045" {
		t.Fatalf("from = %q", from)
	}
	if got := gjson.GetBytes(out, "attachment.snapshot.osVersion").Str; got != host {
		t.Errorf("snapshot osVersion = %q", got)
	}
	if r := gjson.GetBytes(out, "rendered.0.content").Str; !strings.Contains(r, "OS Version: "+host+"\n") || strings.Contains(r, from) {
		t.Errorf("rendered text %q", r)
	}
	if strings.Replace(string(out), `Linux 7.0.0-test \"quoted\"`, "Linux 6.18.44-fc-v1045", 2) != string(env) {
		t.Error("more than the OS version changed")
	}
	if same, f := RelocateEnvironment(out, host); f != "" || string(same) != string(out) {
		t.Error("a line already naming the host changed")
	}
	other := []byte(`{"type":"user","message":{"content":"OS Version: Linux 6.18.44-fc-v1045"}}`)
	if same, f := RelocateEnvironment(other, host); f != "" || string(same) != string(other) {
		t.Error("a line that is not an environment attachment changed")
	}
}
