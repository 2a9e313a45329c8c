package launch

import (
	"bytes"
	"fmt"

	"github.com/tidwall/gjson"
)

// Unlinked says which record RemoveLinked took out of a session log.
type Unlinked struct {
	Line     int    // 1-based line of the removed record
	ID       string // its id
	Relinked int    // records that named it as parent and now name its parent
}

// RemoveLinked takes the one record after the first prefixLines non-blank
// lines for which isNonce holds out of a session log whose records form a
// chain by "id" and "parentId" (Pi's session file, Copilot's events.jsonl),
// and gives the records that named it as parent its own parent: the log reads
// as if the continuation had gone on from the boundary directly. A second
// such record, none at all, or the nonce anywhere else afterwards is an
// error, since the cleaned session must hold nothing of the envelope.
func RemoveLinked(data []byte, nonce string, prefixLines int, isNonce func(rec gjson.Result) bool) ([]byte, Unlinked, error) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	n, k := 0, -1
	var nonceID, nonceParent string
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		n++
		if n <= prefixLines {
			continue
		}
		rec := gjson.ParseBytes(line)
		if isNonce(rec) {
			if k >= 0 {
				return nil, Unlinked{}, fmt.Errorf("lines %d and %d both hold the resume nonce", k+1, i+1)
			}
			k, nonceID, nonceParent = i, rec.Get("id").Str, rec.Get("parentId").Str
		}
	}
	if k < 0 {
		return nil, Unlinked{}, fmt.Errorf("no resume nonce message after the staged prefix: the CLI did not resume this session with it")
	}
	out := bytes.NewBuffer(make([]byte, 0, len(data)))
	relinked := 0
	for i, line := range lines {
		if i == k {
			continue
		}
		if nonceID != "" && gjson.GetBytes(line, "parentId").Str == nonceID {
			nl := bytes.HasSuffix(line, []byte("\n"))
			line = SetString(bytes.TrimRight(line, "\n"), "parentId", nonceParent)
			if nl {
				line = append(line, '\n')
			}
			relinked++
		}
		out.Write(line)
	}
	if bytes.Contains(out.Bytes(), []byte(nonce)) {
		return nil, Unlinked{}, fmt.Errorf("the resume nonce is still in the cleaned session, in records this version of pvisor does not know")
	}
	return out.Bytes(), Unlinked{Line: k + 1, ID: nonceID, Relinked: relinked}, nil
}
