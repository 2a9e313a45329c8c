package replay

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/result"
)

// --disable-thinking as pVisor maps it per agent and protocol.
func TestDisableThinking(t *testing.T) {
	kw := `{"enable_thinking":false}`
	for _, tc := range []struct {
		agent   string
		proto   bridge.Protocol
		args    []string // --agent-arg
		fields  map[string]string
		native  []string
		wantErr string
	}{
		{agent: "claude-code", proto: bridge.Chat, fields: map[string]string{"chat_template_kwargs": kw, "reasoning_effort": `"none"`}},
		{agent: "claude-code", proto: bridge.Anthropic, wantErr: "use --upstream openai-chat"},
		{agent: "claude-code", proto: ""},
		{agent: "opencode", proto: bridge.Chat, fields: map[string]string{"chat_template_kwargs": kw}},
		{agent: "pi", proto: bridge.Chat, native: []string{"--thinking", "off"}},
		{agent: "pi", proto: bridge.Chat, args: []string{"--thinking", "high"}, wantErr: "contradicts"},
		{agent: "codex", proto: bridge.Responses},
	} {
		r := &run{req: &Request{DisableThinking: true, AgentArgs: tc.args}, res: result.New("r", tc.agent)}
		off, err := r.disableThinking(tc.agent, tc.proto)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s/%s: error %v, want %q", tc.agent, tc.proto, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s/%s: %v", tc.agent, tc.proto, err)
		}
		got := map[string]string{}
		for k, v := range off.Fields {
			got[k] = string(v)
		}
		if tc.fields == nil {
			tc.fields = map[string]string{}
		}
		if d := cmp.Diff(tc.fields, got); d != "" || !cmp.Equal(tc.native, off.Args) || off.Effect == "" {
			t.Errorf("%s/%s: fields (-want +got) %s, args %v, effect %q", tc.agent, tc.proto, d, off.Args, off.Effect)
		}
		for _, v := range off.Fields {
			if !json.Valid(v) {
				t.Errorf("invalid field %s", v)
			}
		}
	}
	r := &run{req: &Request{}, res: result.New("r", "claude-code")}
	if off, err := r.disableThinking("claude-code", bridge.Anthropic); err != nil || off.Fields != nil || off.Effect != "" {
		t.Errorf("without the flag: %+v %v", off, err)
	}
}

func TestContinuationArgs(t *testing.T) {
	claude, _ := launcherOf("claude-code")
	got := continuationArgs(&Request{AgentArgs: []string{"--model", "opus"}, DisallowedTools: []string{"WebFetch", "Task"}}, claude)
	if d := cmp.Diff([]string{"--model", "opus", "--disallowedTools", "WebFetch,Task"}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if got := continuationArgs(&Request{}, claude); len(got) != 0 {
		t.Errorf("no flags: %v", got)
	}
}
