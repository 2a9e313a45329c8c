package resume

import (
	"errors"
	"net"
	"net/http"
	"os"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/result"
)

// upstream builds the model upstream of a resume: a protocol with its
// provider's usual environment (keys are read here and never reach the
// agent), or the scripted fake model served on loopback inside pvisor.
func (r *sessionRun) upstream() (bridge.Upstream, map[string]any, error) {
	proto := r.launcher().Protocol()
	name := r.req.Upstream
	if name == "" {
		name = string(proto)
	}
	meta := map[string]any{"kind": name, "protocol": string(proto)}
	if name == replay.UpstreamRecorded {
		return nil, nil, configErr("--upstream recorded plays a trajectory's own next actions, and a resume has none; use a model upstream or --upstream fake")
	}
	if name == replay.UpstreamFake {
		if r.req.FakeScript == "" {
			return nil, nil, configErr("--upstream fake needs --fake-script FILE (the replies the fake model serves)")
		}
		up, err := startFake(r.req.FakeScript, proto)
		if err != nil {
			return nil, nil, err
		}
		meta["endpoint"] = up.HTTPUpstream.String()
		return up, meta, nil
	}
	if r.req.FakeScript != "" {
		return nil, nil, configErr("--fake-script goes with --upstream fake")
	}
	p, err := bridge.ParseProtocol(name)
	if err != nil {
		return nil, nil, configErr("--upstream: %v, or %s", err, replay.UpstreamFake)
	}
	h := http.Header{}
	h.Set(replay.RouterSessionHeader, r.req.RunID)
	cfg := bridge.UpstreamConfig{Protocol: p, Headers: h,
		FirstByteTimeout: r.req.UpstreamFirstByteTimeout, IdleTimeout: r.req.UpstreamIdleTimeout}.FillFromEnv(os.Getenv)
	up, err := replay.ModelUpstream(cfg, proto, string(r.store.Agent()), r.req.UpstreamModel, replay.UpstreamFake, meta)
	if err != nil {
		return nil, nil, err
	}
	return up, meta, nil
}

// fakeUpstream is the fake model on a loopback port, reached like any
// provider.
type fakeUpstream struct {
	*bridge.HTTPUpstream
	srv     *http.Server
	fake    *fakemodel.Server
	replies int
	final   bool // the script has a final text of its own
}

// stats says what the fake model served: main replies from the script
// and requests past its end, answered with its final text.
func (f *fakeUpstream) stats() map[string]any {
	served, exhausted := map[int]bool{}, 0
	for _, q := range f.fake.Requests() {
		switch {
		case q.Kind == fakemodel.KindMain:
			served[q.Reply] = true
		case q.ScriptExhausted:
			exhausted++
		}
	}
	return map[string]any{"replies": f.replies, "served": len(served), "script_exhausted": exhausted, "final_scripted": f.final}
}

func (f *fakeUpstream) Close() error { return f.srv.Close() }

func startFake(script string, proto bridge.Protocol) (*fakeUpstream, error) {
	s, err := fakemodel.LoadScript(script)
	if err != nil {
		return nil, configErr("--fake-script: %v", err)
	}
	if err := s.Validate(); err != nil {
		return nil, configErr("--fake-script %s: %v", script, err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fail(result.ContinuationError, "fake model: %v", err)
	}
	// A server of its own for this run: its replies count from the resumed
	// session's turns and its ids are its own, never the recording's.
	fake := fakemodel.New(s, fakemodel.WithoutBodies())
	srv := &http.Server{Handler: fake}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			ln.Close()
		}
	}()
	base := "http://" + ln.Addr().String()
	if proto != bridge.Anthropic {
		base += "/v1"
	}
	hu, err := bridge.NewHTTPUpstream(bridge.UpstreamConfig{Protocol: proto, BaseURL: base, APIKey: "fake"})
	if err != nil {
		srv.Close()
		return nil, fail(result.InternalError, "fake model: %v", err)
	}
	return &fakeUpstream{HTTPUpstream: hu, srv: srv, fake: fake, replies: len(s.Replies), final: s.Final != ""}, nil
}
