// Package envelope is the agent-neutral machinery of the resume envelopes:
// the bridge.Conversation each agent's continuation runs through. Each
// agent's own envelope lives in its folder (trajectory/<agent>/envelope.go)
// and is built from what is here.
//
// A CLI cannot resume a session that ends at a tool result without a new user
// message, so pvisor resumes it with a transport nonce
// (__PVISOR_NATIVE_REPLAY_<32 hex>__) and the CLI adds it, and sometimes more
// (the resume envelope), to every model request. Each agent's envelope checks
// every request against the rebuilt session, removes what the resume added,
// puts the boundary user prompt where the nonce was (when one was asked for),
// and refuses anything that does not match: a refused request is never
// forwarded. Checks are pure functions of the request, so retries and
// concurrent requests get the same answer.
//
// The shared parts live here: options, the step budget, and the report that
// goes into the run's metadata (counts, lengths and digests; never prompt
// text) in Tracker; the envelope of the Chat Completions agents (Chat) and
// of pvisor's Python runners (Runner); and helpers that cut and compare
// request bodies without touching their other bytes.
package envelope

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"regexp"
	"slices"
	"sync"

	"github.com/pvisor/pvisor/bridge"
)

// Options configure any agent's envelope.
type Options struct {
	// Nonce is the transport prompt the CLI was resumed with (NewNonce).
	Nonce string
	// Prompt is the boundary user prompt, "" for none. It is injected where
	// the nonce was, in every request.
	Prompt string
	// MaxLiveTurns is the step budget after the boundary: a request whose
	// conversation already holds this many model turns past the boundary
	// asks for one too many. 0 means no budget.
	MaxLiveTurns int
	// OnBudget is called once, when the first request over the budget
	// arrives. That request is held, unanswered, until its client goes away:
	// the engine stops the agent, and nothing reaches the model.
	OnBudget func()
}

// Conversation is a bridge.Conversation that reports what it saw.
type Conversation interface {
	bridge.Conversation
	Report() Report
}

// Report is what an envelope saw, for the run's metadata.
type Report struct {
	Checked         int           `json:"checked"`  // model requests checked
	Accepted        int           `json:"accepted"` // requests forwarded
	NonceRemoved    int           `json:"nonce_removed"`
	PromptInjected  int           `json:"prompt_injections"`
	BoundaryEnds    int           `json:"boundary_requests"` // requests ending at the boundary: the first turn and its retries
	MaxLiveTurns    int           `json:"max_live_turns"`    // most model turns past the boundary in one request
	BudgetExceeded  bool          `json:"budget_exceeded"`
	RuntimeItems    int           `json:"runtime_items"` // items the CLI regenerates on every launch, checked by shape
	ContextInserted []ContextItem `json:"context_items"`
	// Variants are the envelope shapes seen (the parts the CLI added, joined
	// with "+", e.g. "no-response+reminders+nonce"), with how many accepted
	// requests had each: CLI releases move and rename these parts, and this
	// says which ones this run met.
	Variants map[string]int `json:"variants"`
}

// ContextItem is a world-state update the CLI inserted between the boundary
// and the nonce (a new date, skills list, working directory). It is forwarded
// as native context and listed here, since the model saw something the
// recorded session did not have at this point.
type ContextItem struct {
	Role   string `json:"role"`
	Tag    string `json:"tag"`    // the text's outer element, e.g. environment_context
	Length int    `json:"length"` // bytes of text
	SHA256 string `json:"sha256"`
	// Requests counts the forwarded requests that carried it.
	Requests int `json:"requests"`
	// Placement is where the forwarded requests carry it: after the
	// boundary (the model sees something the recorded session did not have
	// at that point, so the run is degraded), or next to the first user
	// message, where the release puts it in a session that never left.
	Placement string `json:"placement"`
}

// Context item placements.
const (
	PlacedAfterBoundary     = "after_boundary"
	PlacedAfterFirstMessage = "after_first_message"
)

// NoncePrefix and NonceSuffix frame the 32 hex digits of a nonce; an agent
// derives other per-run markers from those digits.
const NoncePrefix, NonceSuffix = "__PVISOR_NATIVE_REPLAY_", "__"

var nonceRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^__PVISOR_NATIVE_REPLAY_[0-9a-f]{32}__$`) })

// NewNonce returns a fresh transport nonce: 128 random bits, so it cannot
// occur in a session by chance.
func NewNonce() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("envelope: crypto/rand failed: " + err.Error())
	}
	return NoncePrefix + hex.EncodeToString(b) + NonceSuffix
}

// ValidNonce reports whether s has the shape NewNonce returns.
func ValidNonce(s string) bool { return nonceRe().MatchString(s) }

// Tracker is the bookkeeping every envelope shares: the options, the
// report and the step budget. An agent's envelope embeds one (NewTracker)
// and calls Checked for every request, OverBudget once it knows the live
// turns, and Accepted for every request it forwards.
type Tracker struct {
	opts       Options
	budgetOnce sync.Once

	mu  sync.Mutex
	rep Report
}

// NewTracker returns the bookkeeping of an envelope configured by opts.
func NewTracker(opts Options) *Tracker { return &Tracker{opts: opts} }

// Options are the envelope's options: the nonce and the boundary prompt.
func (t *Tracker) Options() Options { return t.opts }

// Checked counts one request checked.
func (t *Tracker) Checked() {
	t.mu.Lock()
	t.rep.Checked++
	t.mu.Unlock()
}

// Accepted records one forwarded request: the envelope variant it had, the
// model turns past the boundary (live), whether it ended at the boundary,
// whether the boundary prompt was injected, how many runtime items it
// carried and the context items inserted before the nonce.
func (t *Tracker) Accepted(variant string, live int, boundary, injected bool, runtime int, ctxItems []ContextItem) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := &t.rep
	r.Accepted++
	if r.Variants == nil {
		r.Variants = map[string]int{}
	}
	r.Variants[variant]++
	r.NonceRemoved++
	if injected {
		r.PromptInjected++
	}
	if boundary {
		r.BoundaryEnds++
	}
	r.MaxLiveTurns = max(r.MaxLiveTurns, live)
	r.RuntimeItems = max(r.RuntimeItems, runtime)
	for _, c := range ctxItems {
		i := slices.IndexFunc(r.ContextInserted, func(o ContextItem) bool { return o.SHA256 == c.SHA256 })
		if i < 0 {
			r.ContextInserted = append(r.ContextInserted, c)
			i = len(r.ContextInserted) - 1
		}
		r.ContextInserted[i].Requests++
	}
}

// Report returns a copy of the counts so far.
func (t *Tracker) Report() Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.rep
	r.ContextInserted = slices.Clone(r.ContextInserted)
	r.Variants = maps.Clone(r.Variants)
	return r
}

// OverBudget holds a request that asks for more model turns than the budget
// allows (live counts those already past the boundary) until its client goes
// away, and returns that as its error, which the bridge records as a
// cancelled request rather than a refusal. nil when the request is within
// the budget.
func (t *Tracker) OverBudget(ctx context.Context, live int) error {
	if t.opts.MaxLiveTurns <= 0 || live < t.opts.MaxLiveTurns {
		return nil
	}
	t.budgetOnce.Do(func() {
		t.mu.Lock()
		t.rep.BudgetExceeded = true
		t.mu.Unlock()
		if t.opts.OnBudget != nil {
			t.opts.OnBudget()
		}
	})
	<-ctx.Done()
	return ctx.Err()
}

// Digest is the hex SHA-256 of s: how a report names a text (a context
// item) without quoting it.
func Digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
