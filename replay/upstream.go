package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/recorded"
	"github.com/pvisor/pvisor/bridge/translate"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/result"
)

// UpstreamRecorded selects the upstream that plays the trajectory's own
// actions after the boundary (no model service needed).
const UpstreamRecorded = "recorded"

// UpstreamFake serves a scripted model inside pvisor (--fake-script): a
// whole resume or fork runs with no model service, for tests and demos.
const UpstreamFake = "fake"

// Hooks let a program that embeds the engine watch a continuation; the e2e
// tests use them. They never travel with the request (an overlay worker runs
// without them).
type Hooks struct {
	// Upstream wraps the model upstream the bridge forwards checked requests
	// to.
	Upstream func(bridge.Upstream) bridge.Upstream
	// Launch sees the CLI launch just before it starts, with the session
	// staged: the continuation benchmark copies the staged home and
	// workspace to time the same CLI resuming them without pvisor.
	Launch func(Launch)
}

// Launch is one CLI launch as the engine runs it.
type Launch struct {
	Entry           string
	Args, Env       []string
	Dir, Home, Temp string // working directory, isolated home, TMPDIR
	Stdin           []byte
	Bridge          string // the bridge's URL
}

// upstream builds the model upstream: --upstream names one, and the default is
// the agent's own protocol with its provider's usual environment
// (OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, …). Keys are read here
// and never reach the agent.
func (r *run) upstream(l Launcher, c *Continuation) (bridge.Upstream, map[string]any, error) {
	name := r.req.Upstream
	if name == "" {
		name = string(l.Protocol())
	}
	meta := map[string]any{"kind": name, "protocol": string(l.Protocol())}
	var up bridge.Upstream
	if name == UpstreamRecorded {
		if r.req.UpstreamFirstByteTimeout != 0 || r.req.UpstreamIdleTimeout != 0 {
			return nil, nil, configErr("%v", ErrRecordedTimeouts)
		}
		off, err := r.disableThinking(r.plan.Format.Agent(), "")
		if err != nil {
			return nil, nil, err
		}
		if off.Effect != "" {
			meta["disable_thinking"] = off.Effect
		}
		replies, err := l.Replies(c)
		if err != nil {
			return nil, nil, fail(result.ConfigurationError, "--upstream recorded: %v", err)
		}
		if len(replies) == 0 {
			return nil, nil, configErr("--upstream recorded: the trajectory has no action after step %d to play; choose an earlier --after-step or a model upstream", c.AfterStep)
		}
		var opts []recorded.Option
		if ta, ok := l.(TextActioner); ok && ta.TextActions(c) {
			opts = append(opts, recorded.TextActions())
		}
		rec, err := recorded.New(l.Protocol(), replies, r.req.RunID, opts...)
		if err != nil {
			return nil, nil, fail(result.InternalError, "%v", err)
		}
		meta["recorded_actions"] = len(replies)
		r.recorded = rec
		up = rec
	} else {
		p, err := bridge.ParseProtocol(name)
		if err != nil {
			return nil, nil, configErr("--upstream: %v, or %s", err, UpstreamRecorded)
		}
		off, err := r.disableThinking(r.plan.Format.Agent(), p)
		if err != nil {
			return nil, nil, err
		}
		if off.Effect != "" {
			meta["disable_thinking"] = off.Effect
		}
		c.AgentArgs = append(slices.Clone(c.AgentArgs), off.Args...)
		cfg, err := r.req.Endpoint.Config(bridge.UpstreamConfig{Protocol: p, Headers: r.routerHeaders(), BodyFields: off.Fields,
			FirstByteTimeout: r.req.UpstreamFirstByteTimeout, IdleTimeout: r.req.UpstreamIdleTimeout}, os.Getenv)
		if err != nil {
			return nil, nil, err
		}
		meta["session_id"] = r.sessionID()
		if up, err = ModelUpstream(cfg, l.Protocol(), r.plan.Format.Agent(), r.req.UpstreamModel, UpstreamRecorded, meta); err != nil {
			return nil, nil, err
		}
	}
	if h := r.req.Hooks; h != nil && h.Upstream != nil {
		up = h.Upstream(up)
	}
	return up, meta, nil
}

// ModelUpstream is the upstream for a model service speaking cfg.Protocol to
// an agent that speaks agentProto: the provider itself, or for Claude Code
// an OpenAI-compatible server through the bridge's one translation. other
// names the upstream to suggest when the protocols cannot meet. The
// endpoint (and translation) go into meta.
func ModelUpstream(cfg bridge.UpstreamConfig, agentProto bridge.Protocol, agent, upstreamModel, other string, meta map[string]any) (bridge.Upstream, error) {
	p := cfg.Protocol
	switch {
	case p == bridge.Chat && agentProto == bridge.Anthropic:
		// Claude Code on an OpenAI-compatible server (vLLM, LiteLLM):
		// the only translation the bridge does, and only on request.
		model := upstreamModel
		if model == "" {
			model = os.Getenv("OPENAI_MODEL")
		}
		if model == "" {
			return nil, configErr("--upstream openai-chat for %s needs the model the server serves (--upstream-model or OPENAI_MODEL): the agent asks for its own model names", agent)
		}
		tu, err := translate.NewChatUpstream(cfg, model)
		if err != nil {
			return nil, configErr("%v", err)
		}
		meta["endpoint"], meta["translation"], meta["model"] = tu.String(), "anthropic-messages-to-chat-completions", model
		return tu, nil
	case p != agentProto:
		return nil, configErr("--upstream %s cannot serve %s, which speaks %s; use --upstream %s or %s",
			p, agent, agentProto, agentProto, other)
	}
	hu, err := bridge.NewHTTPUpstream(cfg)
	if errors.Is(err, bridge.ErrNoAPIKey) {
		return nil, configErr("%v; or, with no model service, --upstream %s (%s)", err, other, noServiceUpstream[other])
	}
	if err != nil {
		return nil, configErr("%v", err)
	}
	meta["endpoint"] = hu.String()
	return hu, nil
}

// ErrRecordedTimeouts refuses upstream timeouts with the recorded upstream.
var ErrRecordedTimeouts = errors.New("the upstream timeouts apply to a model service; --upstream recorded answers from the trajectory at once: remove them")

// UpstreamFailed says how the model upstream failed bin's request; a
// timeout is named with the flag that raises it.
func UpstreamFailed(bin string, lf *bridge.UpstreamFailure) string {
	if flag, ok := timeoutFlags[lf.Timeout]; ok {
		return fmt.Sprintf("%s failed after request %d: %s; if the model is slow rather than stalled, raise %s", bin, lf.Seq, lf.Message, flag)
	}
	return fmt.Sprintf("%s failed after the model upstream answered request %d with %d (%s)", bin, lf.Seq, lf.Status, lf.Kind)
}

var timeoutFlags = map[string]string{
	bridge.TimeoutFirstByte: "--upstream-first-byte-timeout (upstream_first_byte_timeout_ms in a TOML file)",
	bridge.TimeoutIdle:      "--upstream-idle-timeout (upstream_idle_timeout_ms in a TOML file)",
}

// noServiceUpstream says what each upstream that needs no model service does.
var noServiceUpstream = map[string]string{
	UpstreamRecorded: "plays the trajectory's own next actions",
	UpstreamFake:     "a scripted fake model, --fake-script FILE",
}

// ActiveUpstream is up counting every request and response read into
// activity, for an idle watchdog (resume and fork use it too).
func ActiveUpstream(up bridge.Upstream, activity *atomic.Int64) bridge.Upstream {
	return activeUpstream{up, activity}
}

// activeUpstream counts every response byte the upstream produces into
// activity, so a model that streams slowly is not mistaken for an idle agent.
type activeUpstream struct {
	bridge.Upstream
	activity *atomic.Int64
}

func (u activeUpstream) Send(ctx context.Context, req *bridge.Request) (*http.Response, error) {
	u.activity.Add(1)
	res, err := u.Upstream.Send(ctx, req)
	if res != nil {
		res.Body = activeBody{res.Body, u.activity}
	}
	return res, err
}

type activeBody struct {
	io.ReadCloser
	activity *atomic.Int64
}

func (b activeBody) Read(p []byte) (int, error) {
	b.activity.Add(1)
	return b.ReadCloser.Read(p)
}

// RouterSessionHeader carries the model-router session key upstream, as
// pVisor sends it (LiteLLM routes and bills by it).
const RouterSessionHeader = "X-LiteLLM-Session-ID"

// sessionID is the model-router key: --session-id, else the run id; never
// the native session id, which a router would mix across replays of the
// same recording.
func (r *run) sessionID() string {
	if r.req.SessionID != "" {
		return r.req.SessionID
	}
	return r.req.RunID
}

func (r *run) routerHeaders() http.Header {
	h := http.Header{}
	h.Set(RouterSessionHeader, r.sessionID())
	return h
}

// disableThinking maps --disable-thinking for agent continuing through an
// upstream speaking proto ("" for the recorded upstream, which has no model
// to tell), as pVisor maps it (reference pvisor.md §5.1); the agent's
// launcher knows its mapping. An error is a combination pVisor does not
// define.
func (r *run) disableThinking(agent string, proto bridge.Protocol) (launch.ThinkingOff, error) {
	if !r.req.DisableThinking {
		return launch.ThinkingOff{}, nil
	}
	if proto == "" {
		return launch.ThinkingOff{Effect: "none: the recorded upstream has no model"}, nil
	}
	if l, ok := launcherOf(agent); ok {
		if d, ok := l.(launch.ThinkingDisabler); ok {
			return d.DisableThinking(proto, r.req.AgentArgs)
		}
	}
	return launch.ThinkingOff{Effect: "none: pVisor maps --disable-thinking to nothing for " + agent}, nil
}

// Endpoint is a model service of its own for one run, over the provider
// variables of the environment (OPENAI_BASE_URL, ANTHROPIC_API_KEY, …):
// what lets the runs of one batch each reach another model. The key is
// never part of it, only the name of the variable that holds it, so a
// request (which travels to batch children and overlay workers) never
// carries a secret.
type Endpoint struct {
	// BaseURL follows the provider SDK's convention (bridge.UpstreamConfig).
	BaseURL string `json:",omitempty"`
	// KeyEnv names the environment variable holding the API key.
	KeyEnv string `json:",omitempty"`
	// Headers are set on every forwarded request (a router's tenant, say).
	Headers map[string]string `json:",omitempty"`
}

var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// headerName is an HTTP token (RFC 9110).
var headerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$") })

// Check validates e for a run whose upstream is upstream; nil is fine.
func (e *Endpoint) Check(upstream string) error {
	if e == nil {
		return nil
	}
	if upstream == UpstreamRecorded {
		return configErr("base_url, key_env and headers go with a model upstream (%s, %s, %s or the agent's default), not %s",
			bridge.Anthropic, bridge.Responses, bridge.Chat, UpstreamRecorded)
	}
	if e.BaseURL != "" {
		u, err := url.Parse(e.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return configErr("base_url %q: want an http(s) URL such as https://api.example.com/v1", e.BaseURL)
		}
	}
	if e.KeyEnv != "" && !envName().MatchString(e.KeyEnv) {
		return configErr("key_env %q: want the name of an environment variable (the key itself is never written in a file)", e.KeyEnv)
	}
	for _, k := range sortedKeys(e.Headers) {
		if !headerName().MatchString(k) {
			return configErr("headers: %q is not an HTTP header name", k)
		}
		switch http.CanonicalHeaderKey(k) {
		case http.CanonicalHeaderKey(RouterSessionHeader):
			return configErr("headers: %s is set by pvisor (the run's session id)", k)
		case "Authorization", "X-Api-Key", "Api-Key", "Proxy-Authorization":
			return configErr("headers: %s carries a credential, which a file must not hold: put it in an environment variable and name that in key_env", k)
		}
	}
	return nil
}

// Config fills cfg from e, then from the provider variables: e wins. A
// key_env that is unset or empty is an error rather than a fall back to
// the provider's own variable, which would send the run to another
// account without a word.
func (e *Endpoint) Config(cfg bridge.UpstreamConfig, getenv func(string) string) (bridge.UpstreamConfig, error) {
	if e != nil {
		cfg.BaseURL = e.BaseURL
		if e.KeyEnv != "" {
			if cfg.APIKey = getenv(e.KeyEnv); cfg.APIKey == "" {
				return cfg, configErr("key_env %s: the variable is not set (or empty) in pvisor's environment", e.KeyEnv)
			}
		}
		if len(e.Headers) > 0 {
			h := cfg.Headers.Clone()
			if h == nil {
				h = http.Header{}
			}
			for k, v := range e.Headers {
				h.Set(k, v)
			}
			cfg.Headers = h
		}
	}
	return cfg.FillFromEnv(getenv), nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
