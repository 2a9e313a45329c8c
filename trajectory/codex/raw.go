package codex

import "strings"

// payloadField returns the raw JSON of payload.<key> in a record line that
// the jsonl reader has already validated, without unescaping anything.
// gjson unescapes every string value it returns, which for a multi-megabyte
// tool output is a second pass and a copy that a lean decode does not need;
// here strings are skipped with IndexByte.
func payloadField(line, key string) (string, bool) {
	// Only the members before payload and before key are skipped; the
	// payload itself is never scanned to its end.
	i, ok := member(line, 0, "payload")
	if !ok || line[i] != '{' {
		return "", false
	}
	j, ok := member(line, i, key)
	if !ok {
		return "", false
	}
	return line[j:skipValue(line, j)], true
}

// member returns the index of the value of key in the object at s[i].
func member(s string, i int, key string) (int, bool) {
	i = skipSpace(s, i)
	if i >= len(s) || s[i] != '{' {
		return 0, false
	}
	i++
	for {
		i = skipSpace(s, i)
		if i >= len(s) || s[i] != '"' {
			return 0, false // '}' or malformed
		}
		end := skipString(s, i)
		k := s[i+1 : max(i+1, end-1)]
		i = skipSpace(s, end)
		if i >= len(s) || s[i] != ':' {
			return 0, false
		}
		i = skipSpace(s, i+1)
		if k == key && i < len(s) {
			return i, true
		}
		i = skipSpace(s, skipValue(s, i))
		if i >= len(s) || s[i] != ',' {
			return 0, false
		}
		i++
	}
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string literal at s[i].
func skipString(s string, i int) int {
	j := i + 1
	for {
		k := strings.IndexByte(s[j:], '"')
		if k < 0 {
			return len(s)
		}
		k += j
		n := 0
		for m := k - 1; m > i && s[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			return k + 1
		}
		j = k + 1
	}
}

// skipValue returns the index just past the JSON value at s[i].
func skipValue(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				i = skipString(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(s) && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\n' && s[i] != '\t' && s[i] != '\r' {
		i++
	}
	return i
}
