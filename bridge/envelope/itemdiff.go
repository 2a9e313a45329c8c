package envelope

import (
	"fmt"
	"sort"
)

// FirstDifference names where two decoded JSON values first differ, as a
// path ("output", "content[0].text") with what differs there (a value, a
// type, a key one side lacks, a length), never the values themselves: a
// refusal must say which field of an item changed without quoting it.
func FirstDifference(got, want any, path string) string {
	at := path
	if at == "" {
		at = "the item"
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return at + " (another JSON type)"
		}
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			sub := k
			if path != "" {
				sub = path + "." + k
			}
			gv, inG := g[k]
			wv, inW := w[k]
			switch {
			case !inW:
				return sub + " (only in the request)"
			case !inG:
				return sub + " (missing from the request)"
			}
			if d := FirstDifference(gv, wv, sub); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return at + " (another JSON type)"
		}
		for i := 0; i < len(w) && i < len(g); i++ {
			if d := FirstDifference(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		if len(g) != len(w) {
			return fmt.Sprintf("%s (%d elements, the rebuilt session has %d)", at, len(g), len(w))
		}
		return ""
	}
	if fmt.Sprintf("%T", got) != fmt.Sprintf("%T", want) {
		return at + " (another JSON type)"
	}
	if got != want {
		return at + " (another value)"
	}
	return ""
}
