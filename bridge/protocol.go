package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Protocol is a model wire protocol. The same names select an upstream kind
// (--upstream anthropic|openai-responses|openai-chat), since every upstream here is
// a same-protocol passthrough.
type Protocol string

const (
	Anthropic Protocol = "anthropic"        // Anthropic Messages (Claude Code, Pi)
	Responses Protocol = "openai-responses" // OpenAI Responses (Codex, Pi)
	Chat      Protocol = "openai-chat"      // OpenAI Chat Completions (OpenCode, Pi)
)

// ParseProtocol accepts the names above.
func ParseProtocol(s string) (Protocol, error) {
	switch p := Protocol(s); p {
	case Anthropic, Responses, Chat:
		return p, nil
	}
	return "", fmt.Errorf("unknown model protocol %q: use %s, %s or %s", s, Anthropic, Responses, Chat)
}

// Route is one model endpoint the bridge serves.
type Route string

const (
	RouteMessages    Route = "messages"         // POST /v1/messages
	RouteCountTokens Route = "count_tokens"     // POST /v1/messages/count_tokens
	RouteResponses   Route = "responses"        // POST /v1/responses
	RouteChat        Route = "chat_completions" // POST /v1/chat/completions
)

// route describes a model endpoint: its path on the bridge and the suffix appended
// to an upstream base URL.
type route struct {
	name   Route
	proto  Protocol
	path   string // exact path the clients post to
	suffix string // after the upstream's /v1 (OpenAI bases include /v1, Anthropic's do not)
}

var modelRoutes = []route{
	{RouteMessages, Anthropic, "/v1/messages", "/messages"},
	{RouteCountTokens, Anthropic, "/v1/messages/count_tokens", "/messages/count_tokens"},
	{RouteResponses, Responses, "/v1/responses", "/responses"},
	{RouteChat, Chat, "/v1/chat/completions", "/chat/completions"},
}

func findRoute(path string) (route, bool) {
	for _, rt := range modelRoutes {
		if rt.path == path {
			return rt, true
		}
	}
	return route{}, false
}

// protocolForPath picks the error shape for any path, including unknown ones:
// Claude Code only ever talks Anthropic under /v1/messages, so everything else gets
// the OpenAI shape, which is also what generic clients expect.
func protocolForPath(path string) Protocol {
	if path == "/v1/messages" || strings.HasPrefix(path, "/v1/messages/") {
		return Anthropic
	}
	return Responses
}

// errorKind is the provider-neutral reason for a bridge-made error; each protocol
// spells it its own way.
type errorKind int

const (
	errInvalid     errorKind = iota // 400, refusals
	errAuth                         // 401
	errPermission                   // 403, 421
	errNotFound                     // 404, 405
	errTooLarge                     // 413
	errUnsupported                  // 415
	errUpstream                     // 502: the upstream could not be reached or misbehaved
)

func (k errorKind) anthropicType() string {
	switch k {
	case errAuth:
		return "authentication_error"
	case errPermission:
		return "permission_error"
	case errNotFound:
		return "not_found_error"
	case errTooLarge:
		return "request_too_large"
	case errUpstream:
		return "api_error"
	}
	return "invalid_request_error"
}

// openAI returns the OpenAI error type and code for k. OpenAI itself answers a bad
// key with type invalid_request_error and code invalid_api_key.
func (k errorKind) openAI() (typ, code string) {
	switch k {
	case errAuth:
		return "invalid_request_error", "invalid_api_key"
	case errPermission:
		return "invalid_request_error", "forbidden"
	case errNotFound:
		return "invalid_request_error", "not_found"
	case errTooLarge:
		return "invalid_request_error", "request_too_large"
	case errUnsupported:
		return "invalid_request_error", "unsupported_content_encoding"
	case errUpstream:
		return "server_error", "upstream_error"
	}
	return "invalid_request_error", "pvisor_bridge_refusal"
}

// messagePrefix marks every message the bridge itself writes, so an agent's log (and
// whoever reads it) can tell a bridge error from one the model provider sent.
const messagePrefix = "pvisor bridge: "

// writeError answers in p's own error shape. retry=false adds x-should-retry: false,
// which the Anthropic and OpenAI SDKs honour, so a refusal is not re-sent.
func writeError(w http.ResponseWriter, p Protocol, status int, kind errorKind, msg string, retry bool) {
	msg = messagePrefix + msg
	var body any
	if p == Anthropic {
		body = struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}{Type: "error", Error: struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}{kind.anthropicType(), msg}}
	} else {
		typ, code := kind.openAI()
		body = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // messages quote paths and tags; keep them readable
	_ = enc.Encode(body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(b.Len()))
	if !retry {
		h.Set("x-should-retry", "false")
	}
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// writeModels answers GET /v1/models in a shape both SDK families parse
// (Anthropic: type, display_name, created_at, has_more, first_id, last_id; OpenAI:
// object, created, owned_by).
func (s *Server) writeModels(w http.ResponseWriter) {
	type model struct {
		Type        string `json:"type"`
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		CreatedAt   string `json:"created_at"`
		Object      string `json:"object"`
		Created     int64  `json:"created"`
		OwnedBy     string `json:"owned_by"`
	}
	list := struct {
		Object  string  `json:"object"`
		Data    []model `json:"data"`
		HasMore bool    `json:"has_more"`
		FirstID *string `json:"first_id"`
		LastID  *string `json:"last_id"`
	}{Object: "list", Data: []model{}}
	for i, id := range s.opts.Models {
		list.Data = append(list.Data, model{"model", id, id, "1970-01-01T00:00:00Z", "model", 0, "pvisor"})
		if i == 0 {
			list.FirstID = &s.opts.Models[0]
		}
		list.LastID = &s.opts.Models[i]
	}
	writeJSON(w, list)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only the bridge's own fixed types reach here
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
}
