package fakemodel_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/fakemodel"
)

func ExampleNew() {
	script, _ := fakemodel.ParseScript([]byte(`{"replies":[
		{"text":"Listing.","tool_calls":[{"name":"bash","arguments":{"command":"ls"}}]},
		{"text":"Two files."}]}`))
	s := fakemodel.New(script)
	srv := httptest.NewServer(s)
	defer srv.Close()

	// A conversation with no assistant turn yet gets reply 0.
	res, _ := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"model":"m","tools":[{"type":"function","function":{"name":"bash"}}],"messages":[{"role":"user","content":"list files"}]}`))
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Println(gjson.GetBytes(body, "choices.0.message.tool_calls.0.function.arguments"))

	first := s.Requests()[0]
	fmt.Println(first.Kind, first.Reply, gjson.GetBytes(first.Body, "messages.0.content"))
	// Output:
	// {"command":"ls"}
	// main 0 list files
}
