package launch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"
)

// MaxLine bounds one line of a session file or a CLI's output read here.
const MaxLine = 64 << 20

// ScanLines calls f with each non-blank line of path.
func ScanLines(path string, f func(line []byte)) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := ReadLine(r)
		if len(bytes.TrimSpace(line)) > 0 {
			f(line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// ReadLine reads one line of at most MaxLine bytes.
func ReadLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLine {
			return nil, fmt.Errorf("a line longer than %d bytes", MaxLine)
		}
		line = append(line, chunk...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// StreamID finds the session id in a CLI's JSON event stream: the value at
// idPath of the first event whose key equals value.
func StreamID(key, value, idPath string) func(string) (string, error) {
	return func(stdout string) (string, error) {
		id := ""
		err := ScanLines(stdout, func(line []byte) {
			if id == "" && gjson.GetBytes(line, key).Str == value {
				id = gjson.GetBytes(line, idPath).Str
			}
		})
		if err != nil {
			return "", err
		}
		if id == "" {
			return "", fmt.Errorf("its output has no %s=%q event with a %s", key, value, idPath)
		}
		return id, nil
	}
}

// TextBlocks joins the text blocks of a content array.
func TextBlocks(content gjson.Result) string {
	var b strings.Builder
	content.ForEach(func(_, block gjson.Result) bool {
		if block.Get("type").Str == "text" {
			b.WriteString(block.Get("text").Str)
		}
		return true
	})
	return b.String()
}

// SetString replaces the string at path in line, if there is one, leaving
// every other byte as it was.
func SetString(line []byte, path, value string) []byte {
	v := gjson.GetBytes(line, path)
	if v.Type != gjson.String || v.Index <= 0 || v.Str == value {
		return line
	}
	out := make([]byte, 0, len(line)+len(value))
	out = append(out, line[:v.Index]...)
	q, _ := json.Marshal(value) // a string always encodes
	out = append(out, q...)
	return append(out, line[v.Index+len(v.Raw):]...)
}

// FirstLine is b up to its first newline.
func FirstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i]
	}
	return b
}

// EnvValue is the last value of name in env ("" when unset).
func EnvValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// LookIn finds an executable name in the absolute directories of path.
func LookIn(path, name string) string {
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}
