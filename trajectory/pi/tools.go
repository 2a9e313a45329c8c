package pi

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// replayTools are pi's built-in tools: read, bash, edit and write by
// default, grep, find and ls when enabled (--tools). Argument names are
// those of the built-in schemas (path, command, oldText/newText, …).
var replayTools = []string{"read", "bash", "edit", "write", "grep", "find", "ls"}

// required lists the string arguments each tool cannot run without;
// content/newText may be empty.
var required = map[string][]string{
	"read":  {"path"},
	"bash":  {"command"},
	"write": {"path", "content"},
	"grep":  {"pattern"},
	"find":  {"pattern"},
}

func (format) ReplayTools() []string { return append([]string(nil), replayTools...) }

func (format) CheckReplayable(call *trajectory.ToolCall) error {
	known := false
	for _, t := range replayTools {
		if t == call.Name {
			known = true
			break
		}
	}
	if !known {
		return fmt.Errorf("%q is not one of pi's built-in tools (%s); extension and custom tools are not available to the replay",
			call.Name, strings.Join(replayTools, ", "))
	}
	args := gjson.ParseBytes(call.Arguments)
	if !args.IsObject() {
		return errors.New("its arguments are not a JSON object")
	}
	for _, k := range required[call.Name] {
		v := args.Get(k)
		if v.Type != gjson.String || (k != "content" && v.Str == "") {
			return fmt.Errorf("argument %q is missing or not a string", k)
		}
	}
	if call.Name == "edit" {
		return checkEdit(args)
	}
	return nil
}

// checkEdit accepts both edit schemas: {path, edits:[{oldText, newText}]}
// (pi ≥ 0.6x, edits possibly sent as a JSON string) and the older
// {path, oldText, newText}; newText may be empty.
func checkEdit(args gjson.Result) error {
	if p := args.Get("path"); p.Type != gjson.String || p.Str == "" {
		return errors.New("argument \"path\" is missing or not a string")
	}
	legacy := args.Get("oldText").Type == gjson.String && args.Get("newText").Type == gjson.String
	edits := args.Get("edits")
	if edits.Type == gjson.String {
		edits = gjson.Parse(edits.Str)
	}
	if !edits.Exists() && legacy {
		return nil
	}
	if !edits.IsArray() || (len(edits.Array()) == 0 && !legacy) {
		return errors.New("argument \"edits\" must be a non-empty array of {oldText, newText}")
	}
	for _, e := range edits.Array() {
		if e.Get("oldText").Type != gjson.String || e.Get("newText").Type != gjson.String {
			return errors.New("every entry of \"edits\" needs string \"oldText\" and \"newText\"")
		}
	}
	return nil
}

// fullOutputPath is where a truncated bash result says its full output is:
// a file named at random in the temp directory of that run.
var fullOutputPath = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(Full output: )\S*pi-bash-[0-9a-f]+\.log\]`) })

// NormalizeObservation masks the run-to-run field of Pi's results: the
// full-output file a truncated bash result names.
func (format) NormalizeObservation(content string) string {
	if !strings.Contains(content, "pi-bash-") {
		return content
	}
	return fullOutputPath().ReplaceAllString(content, "${1}<temp file>]")
}
