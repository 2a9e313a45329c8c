// Package bridge is pvisor's loopback model-protocol bridge. One Server serves one
// replay: the real agent CLI (Claude Code, Codex, OpenCode, Pi) is pointed at it,
// every model request is checked and rewritten by a Conversation (the per-agent
// resume-envelope strippers plug in there), and the checked request goes to an
// Upstream whose answer is streamed back to the agent byte for byte.
//
// # Using it
//
//	up, err := bridge.NewHTTPUpstream(bridge.UpstreamConfig{Protocol: bridge.Anthropic}.FillFromEnv(os.Getenv))
//	srv, err := bridge.Start(bridge.Options{Upstream: up, Conversation: stripper, Logger: log})
//	defer srv.Close()
//	// Agent environment: ANTHROPIC_BASE_URL=srv.URL(), ANTHROPIC_API_KEY=srv.Token()
//	// (OpenAI-style clients: base URL srv.URL()+"/v1", key srv.Token()).
//	select {
//	case <-agentExited:
//	case <-srv.Refused(): // stop the agent; fail with continuation_error (exit 40)
//	}
//	meta := srv.Records() // sizes, SHA-256 digests, statuses; srv.Stats() for counts
//
// # What the server accepts
//
// It listens on 127.0.0.1 on a free port, never on another address. Requests are
// checked in this order, and each refusal is answered in the protocol's own error
// JSON with x-should-retry: false:
//
//   - Host must be 127.0.0.1:PORT or localhost:PORT (DNS-rebinding defence): 421.
//   - No Origin header (not even an empty one), Sec-Fetch-Site absent, none or same-origin (browsers): 403.
//   - The per-run token (256 random bits) as x-api-key or Authorization: Bearer,
//     compared in constant time; every credential presented must match: 401.
//   - HEAD / (Claude Code's connectivity probe) is answered 200, with the token.
//   - GET /v1/models is answered locally from Options.Models.
//   - Model routes, POST only (405 otherwise): /v1/messages and
//     /v1/messages/count_tokens (Anthropic), /v1/responses (OpenAI Responses),
//     /v1/chat/completions (Chat Completions). Anything else: 404.
//   - Bodies are capped at Options.MaxBodyBytes (32 MiB by default), before and
//     after gzip decoding: 413. Other request encodings (Codex's zstd): 415.
//
// Anthropic routes get {"type":"error","error":{"type","message"}}; everything
// else gets OpenAI's {"error":{"message","type","param","code"}}.
//
// # The plug-in point
//
// Conversation.Check sees each authenticated model request (Request: sequence
// number, protocol, route, path with query, headers without credentials, decoded
// body) and returns the body to forward. Any error is a refusal: a non-retryable
// 4xx, nothing forwarded, Refused() closed and Options.OnRefusal called once, and
// every later model request refused as well. Passthrough forwards unchanged.
//
// # Upstreams
//
// HTTPUpstream passes one protocol through to a model service (anthropic,
// openai-responses or openai-chat; the bridge never translates). It replaces the
// client's credential with the upstream key, drops hop-by-hop headers, sends
// Accept-Encoding: identity and never uses a proxy from the environment. The
// answer — status, headers (minus hop-by-hop and Set-Cookie) and body — is relayed
// as it arrives with a flush after every read, so SSE events and pings reach the
// agent when the provider sends them. Upstream errors (429, 5xx) are relayed as
// the provider wrote them; an unreachable upstream or a redirect becomes a 502 in
// the provider's shape; a stream that breaks off mid-way breaks the client's
// connection too, so a truncated stream never looks complete. The client's
// cancellation cancels the upstream request. Stats.LastFailure classifies model
// failures for the engine: rate_limit (429), internal (5xx), connection.
//
// Another Upstream (the recorded upstream that plays the original trajectory,
// package bridge/recorded) implements the same two methods and returns an
// *http.Response to relay. The per-agent Conversations live in each agent's
// folder (trajectory/<agent>/envelope.go), built from bridge/envelope's
// shared machinery.
//
// # Secrets
//
// Nothing the bridge logs or records holds a body, a header value, the run token
// or the upstream key: records carry method, path without query, status, outcome,
// sizes and SHA-256 digests. Refusal reasons are shown to the agent and logged, so
// a Conversation must keep prompt text out of them.
package bridge
