package sweagent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// fileStatementTypes are the problem statements SWE-agent reads from a
// file when it starts: 1.x's FileProblemStatement ("text_file", with a
// path) and the "file" spelling pVisor also accepts. A statement of any
// other type (text, github, empty, swe_bench_multimodal) is in the
// trajectory already or fetched, not a file beside it.
var fileStatementTypes = map[string]bool{"text_file": true, "file": true}

// InlineAssets replaces replay_config.problem_statement, when it names a
// file, with the TextProblemStatement SWE-agent would have made of that
// file's text: type "text", the text where the path was, every other key
// (id, extra_fields) as recorded. replay_config may be an object or, as
// SWE-agent 1.x writes it, a JSON document in a string; either way only
// the statement's bytes change.
func (format) InlineAssets(prefix []byte, assets *os.Root) ([]byte, []trajectory.InlinedAsset, error) {
	rc := gjson.GetBytes(prefix, "replay_config")
	switch rc.Type {
	case gjson.JSON:
		return inlineStatement(prefix, gjson.GetBytes(prefix, "replay_config.problem_statement"), "replay_config.problem_statement", assets)
	case gjson.String:
		inner := []byte(rc.Str)
		ps := gjson.GetBytes(inner, "problem_statement")
		newInner, a, err := inlineStatement(inner, ps, "replay_config (a JSON string) problem_statement", assets)
		if err != nil || a == nil {
			return prefix, nil, err
		}
		enc, err := marshalNoEscape(string(newInner))
		if err != nil {
			return nil, nil, err
		}
		out, err := splice(prefix, rc, enc)
		return out, a, err
	default:
		return prefix, nil, nil
	}
}

// inlineStatement inlines the problem statement ps, found in doc at field.
func inlineStatement(doc []byte, ps gjson.Result, field string, assets *os.Root) ([]byte, []trajectory.InlinedAsset, error) {
	if !ps.IsObject() || !fileStatementTypes[ps.Get("type").Str] {
		return doc, nil, nil
	}
	path := ps.Get("path")
	if path.Type != gjson.String {
		return nil, nil, fmt.Errorf("%s is of type %q but has no path string", field, ps.Get("type").Str)
	}
	text, sum, err := readAsset(assets, path.Str)
	if err != nil {
		return nil, nil, fmt.Errorf("%s names %q: %w", field, path.Str, err)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	var ferr error
	ps.ForEach(func(k, v gjson.Result) bool {
		if !first {
			b.WriteByte(',')
		}
		first = false
		switch k.Str {
		case "type":
			b.WriteString(`"type":"text"`)
		case "path":
			// The text takes the path's place: SWE-agent's TextProblemStatement.
			b.WriteString(`"text":`)
			enc, err := marshalNoEscape(text)
			if err != nil {
				ferr = err
				return false
			}
			b.Write(enc)
		default:
			key, _ := marshalNoEscape(k.Str)
			b.Write(key)
			b.WriteByte(':')
			b.WriteString(v.Raw)
		}
		return true
	})
	if ferr != nil {
		return nil, nil, ferr
	}
	b.WriteByte('}')
	out, err := splice(doc, ps, b.Bytes())
	if err != nil {
		return nil, nil, err
	}
	return out, []trajectory.InlinedAsset{{Field: "replay_config.problem_statement", Path: path.Str, Bytes: int64(len(text)), SHA256: sum}}, nil
}

// readAsset reads a file under the assets root: a relative path that stays
// inside it (os.Root refuses '..' and symlinks that leave it), a regular
// file of at most trajectory.MaxAssetBytes of UTF-8 text, as SWE-agent
// reads it with read_text.
func readAsset(assets *os.Root, rel string) (string, string, error) {
	if rel == "" || filepath.IsAbs(rel) {
		return "", "", fmt.Errorf("only a relative path can be inlined from --trajectory-assets (pVisor's rule too); put the file under the assets dir and name it relative there in the trajectory, or pass the trajectory without --trajectory-assets")
	}
	f, err := assets.Open(rel)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", "", fmt.Errorf("no such file under --trajectory-assets %s", assets.Name())
		}
		return "", "", fmt.Errorf("%v (a path must stay inside --trajectory-assets %s)", err, assets.Name())
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", "", err
	}
	if !st.Mode().IsRegular() {
		return "", "", fmt.Errorf("not a regular file under --trajectory-assets %s", assets.Name())
	}
	data, err := io.ReadAll(io.LimitReader(f, trajectory.MaxAssetBytes+1))
	if err != nil {
		return "", "", err
	}
	if len(data) > trajectory.MaxAssetBytes {
		return "", "", fmt.Errorf("larger than %d MiB, the most pvisor inlines", trajectory.MaxAssetBytes>>20)
	}
	if !utf8.Valid(data) {
		return "", "", fmt.Errorf("not UTF-8 text, which SWE-agent reads a problem statement as")
	}
	sum := sha256.Sum256(data)
	return string(data), hex.EncodeToString(sum[:]), nil
}

// splice replaces the bytes of v (found in doc by gjson) with repl.
func splice(doc []byte, v gjson.Result, repl []byte) ([]byte, error) {
	i := v.Index
	if i <= 0 || i+len(v.Raw) > len(doc) || string(doc[i:i+len(v.Raw)]) != v.Raw {
		return nil, fmt.Errorf("the SWE-agent prefix's replay_config could not be located to inline the problem statement")
	}
	out := make([]byte, 0, len(doc)-len(v.Raw)+len(repl))
	out = append(out, doc[:i]...)
	out = append(out, repl...)
	return append(out, doc[i+len(v.Raw):]...), nil
}

// marshalNoEscape encodes s as a JSON string without HTML escapes, as
// Python's json.dumps leaves '<', '>' and '&'.
func marshalNoEscape(s string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
