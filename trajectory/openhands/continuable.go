package openhands

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// Continuable says whether a V1 conversation can be reopened by an SDK
// agent built with the tool kinds in tools, up to event line last: its
// SystemPromptEvent lists the agent's tools in the SDK 1.x shape (each with
// its `kind`), every one of them known, and the events up to last project
// (see Projection). Event logs without a system prompt (trimmed, or written
// by an SDK that did not record one) say nothing about the agent to rebuild.
func Continuable(r io.Reader, last int, tools map[string]bool) error {
	var head bytes.Buffer
	jr := jsonl.NewReader(bufio.NewReader(r))
	system := false
	for jr.Next() {
		l := jr.Line()
		if l.N > last {
			break
		}
		head.Write(l.Data)
		head.WriteByte('\n')
		ev := gjson.ParseBytes(l.Data)
		if ev.Get("kind").Str != "SystemPromptEvent" || system {
			continue
		}
		system = true
		var unknown []string
		list := ev.Get("tools")
		if !list.IsArray() {
			return fmt.Errorf("line %d: the SystemPromptEvent lists no tools", l.N)
		}
		for _, t := range list.Array() {
			kind := t.Get("kind").Str
			if kind == "" {
				return fmt.Errorf("line %d: the SystemPromptEvent's tools have no \"kind\": written by an SDK release older than the tested ones", l.N)
			}
			if !tools[kind] {
				unknown = append(unknown, kind)
			}
		}
		if len(unknown) > 0 {
			known := make([]string, 0, len(tools))
			for k := range tools {
				known = append(known, k)
			}
			sort.Strings(known)
			return fmt.Errorf("the agent used %s, which the runner cannot build (it builds %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
		}
	}
	if err := jr.Err(); err != nil {
		return err
	}
	if !system {
		return fmt.Errorf("the events hold no SystemPromptEvent before the boundary, so the agent's tools and prompt are unknown; pass the whole conversation (jq -c . <conversation>/events/event-*.json)")
	}
	_, err := Projection(&head)
	return err
}
