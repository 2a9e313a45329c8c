package launch

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestRemoveLinked(t *testing.T) {
	const nonce = "__nonce__"
	isNonce := func(rec gjson.Result) bool { return rec.Get("text").Str == nonce }
	pre := `{"id":"a","parentId":""}` + "\n" + `{"id":"b","parentId":"a"}` + "\n"
	n := `{"id":"n","parentId":"b","text":"` + nonce + `"}` + "\n"
	child := `{"id":"c","parentId":"n"}` + "\n"
	tests := []struct {
		name, data, want, err string
		prefix                int
		unlinked              Unlinked
	}{
		{name: "relinks the child", data: pre + n + child, prefix: 2,
			want: pre + `{"id":"c","parentId":"b"}` + "\n", unlinked: Unlinked{Line: 3, ID: "n", Relinked: 1}},
		{name: "no trailing newline", data: pre + n + strings.TrimSuffix(child, "\n"), prefix: 2,
			want: pre + `{"id":"c","parentId":"b"}`, unlinked: Unlinked{Line: 3, ID: "n", Relinked: 1}},
		{name: "nonce inside the prefix is not looked at", data: n + pre, prefix: 1, err: "no resume nonce"},
		{name: "twice", data: pre + n + n, prefix: 2, err: "lines 3 and 4"},
		{name: "nonce left elsewhere", data: pre + n + `{"id":"c","parentId":"n","x":"` + nonce + `"}`, prefix: 2, err: "still in the cleaned session"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, u, err := RemoveLinked([]byte(tc.data), nonce, tc.prefix, isNonce)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want || u != tc.unlinked {
				t.Fatalf("got %q %+v\nwant %q %+v", got, u, tc.want, tc.unlinked)
			}
		})
	}
}
