package idempotency

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/internal/seal"
)

// MaxKeyLength is the longest key accepted, in characters.
const MaxKeyLength = 255

// ValidKey reports whether key is a key Admit accepts: valid UTF-8, 1 to MaxKeyLength
// characters (two keys differing only in bad bytes would be listed as one key that no GET
// finds). The MCP tools' idempotencyKey argument follows the same rule (package tools).
func ValidKey(key string) bool {
	n := utf8.RuneCountInString(key)
	return utf8.ValidString(key) && n >= 1 && n <= MaxKeyLength
}

// Config tunes a Service; a nil *Config means the defaults.
type Config struct {
	// Now is the clock for record times (default time.Now).
	Now func() time.Time
	// TTL is how long an answer is kept from when it was answered (default 24h).
	TTL time.Duration
	// LockTTL is how long an in-progress claim holds; an older claim counts as abandoned
	// (its process died) and the next request takes the key over (default 2m).
	LockTTL time.Duration
	// InProgressWait is how long a retry waits for the first request to finish (default 1s).
	InProgressWait time.Duration
	// MaxKeys is the most kept keys per scope (default 10,000).
	MaxKeys int
	// MaxBody is the biggest answer body kept, in bytes (default 64 KiB); a bigger answer
	// leaves the key taken without a replayable answer.
	MaxBody int
	// Logger receives warnings about the store (default slog.Default()).
	Logger *slog.Logger
	// Registerer receives the metrics; nil means no metrics are registered.
	Registerer prometheus.Registerer
	// SecretKey (32 bytes, a process's <data-dir>/secret.key) keys the sealing of the kept
	// answers of Policy.Secret requests. Nil means a random key of the Service's own: such
	// an answer replays only through the Service that kept it; another Service (another
	// process, or after a restart) answers its key with ErrAnswerUnreadable until it expires.
	SecretKey []byte
	// Events carries "a key finished" (events.Key) to the retries waiting on it, in this
	// process and, when it is the process's bus started with the store's transport, in
	// others. Nil means a bus of the service's own, which hears only this service.
	Events *events.Bus
}

func (c *Config) withDefaults() *Config {
	out := Config{}
	if c != nil {
		out = *c
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	out.TTL = cmp.Or(out.TTL, 24*time.Hour)
	out.LockTTL = cmp.Or(out.LockTTL, 2*time.Minute)
	out.InProgressWait = cmp.Or(out.InProgressWait, time.Second)
	out.MaxKeys = cmp.Or(out.MaxKeys, 10_000)
	out.MaxBody = cmp.Or(out.MaxBody, 64<<10)
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.Events == nil {
		out.Events = events.New(nil, &events.Config{Logger: out.Logger})
	}
	return &out
}

func (c *Config) validate() error {
	switch {
	case c.TTL < 0, c.LockTTL < 0, c.InProgressWait < 0:
		return errors.New("idempotency config: durations must not be negative")
	case c.MaxKeys < 0, c.MaxBody < 0:
		return errors.New("idempotency config: MaxKeys and MaxBody must not be negative")
	case c.SecretKey != nil && len(c.SecretKey) != 32:
		return fmt.Errorf("idempotency config: SecretKey must be 32 bytes, got %d", len(c.SecretKey))
	}
	return nil
}

// Request is one keyed request as Do sees it: the key, whose it is, and what identifies
// the request (its Fingerprint).
type Request struct {
	Scope  string // PrincipalScope or WorkflowScope
	Key    string
	Method string
	Path   string
	Query  url.Values
	Body   []byte
	Policy Policy
}

// Policy varies the rules per surface; the zero Policy is the REST one.
type Policy struct {
	// KeepFailures keeps every answer, whatever its status (webhooks, SPEC §4 rule 10).
	KeepFailures bool
	// EvictOldest evicts the oldest key at MaxKeys instead of refusing (webhooks).
	EvictOldest bool
	// Secret says the answer carries a secret (a webhook token): its body is kept sealed
	// under Config.SecretKey, bound to its scope and key, and opened to replay it.
	Secret bool
}

// Response is an answer as Do keeps and replays it.
type Response struct {
	Status   int
	Header   http.Header // a replay carries only Content-Type and Location
	Body     []byte
	Replayed bool // the answer is a replay: nothing was done
	// RunID is the run the answer names, if any: set by whoever made the answer, kept in
	// the key's record and given back with a replay, so no one parses a body to find it.
	RunID string
}

// PrincipalScope is the scope of a principal's keys.
func PrincipalScope(principalID string) string { return "p:" + principalID }

// WorkflowScope is the scope of a workflow's webhook keys.
func WorkflowScope(workflowID string) string { return "w:" + workflowID }

// Service does keyed requests once and replays their answers.
type Service struct {
	store   Store
	cfg     *Config
	metrics *metrics
	answers answers   // finished keys held in memory, as stored, so that a replay reads no store
	box     *seal.Box // seals the kept answers of Policy.Secret requests
}

// New builds a Service over store.
func New(store Store, cfg *Config) (*Service, error) {
	if store == nil {
		return nil, errors.New("idempotency: nil store")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	box, err := newAnswerBox(cfg.SecretKey)
	if err != nil {
		return nil, err
	}
	return &Service{store: store, cfg: cfg, metrics: m, box: box}, nil
}

// Do runs fn once for req's scope and key and keeps its answer (SPEC §4): a retry of the
// same request replays the kept answer (Replayed set) without calling fn; another request
// with the key gets ErrKeyMismatch; a retry while fn still runs waits up to
// InProgressWait, then replays or gets ErrInProgress. An invalid key gets ErrInvalidKey and
// a full scope a *LimitError, with fn never called. When the store cannot be reached, fn
// runs without the key. fn must return a Response or an error; an error or a failed status
// frees the key (unless Policy.KeepFailures).
func (s *Service) Do(ctx context.Context, req Request, fn func(ctx context.Context) (*Response, error)) (*Response, error) {
	fp, held, err := s.lookup(req, s.cfg.Now())
	switch {
	case err != nil:
		return nil, err
	case held != nil:
		return s.answer(held, fp)
	}
	var deadline time.Time
	for {
		claim := s.claimParams(req, fp)
		res, err := s.store.Claim(ctx, claim)
		if err != nil {
			return s.passThrough(ctx, req, err, fn)
		}
		switch res.Outcome {
		case Claimed:
			return s.run(ctx, req, claim, fn)
		case LimitReached:
			s.metrics.count(outcomeCap)
			return nil, newLimitError(claim.Now, res.Oldest)
		case Existing:
		default:
			return nil, fmt.Errorf("claiming idempotency key: unknown outcome %d", res.Outcome)
		}
		if res.Record.State != StateInProgress || res.Record.Fingerprint != fp {
			s.answers.put(req, fp, res.Record)
			return s.answer(res.Record, fp)
		}
		if deadline.IsZero() {
			// Waiting is real time; the configured clock only dates records.
			deadline = time.Now().Add(s.cfg.InProgressWait)
		}
		resp, freed, err := s.await(ctx, req, fp, deadline)
		if !freed {
			return resp, err
		}
	}
}

// lookup checks req's key and returns the Fingerprint that identifies req, and its key's
// record when it is held in memory and live at now (see answers): then the store need not
// be asked. The fingerprint of a request the held key was last asked with is not computed
// again.
func (s *Service) lookup(req Request, now time.Time) (fp string, held *Record, err error) {
	if !ValidKey(req.Key) {
		s.metrics.count(outcomeInvalid)
		return "", nil, ErrInvalidKey
	}
	if holds(req) {
		if rec, same, ok := s.answers.get(req, now); ok {
			if same {
				return rec.Fingerprint, rec, nil
			}
			fp := Fingerprint(req.Method, req.Path, req.Query, req.Body)
			if fp == rec.Fingerprint {
				s.answers.put(req, fp, rec) // remember this spelling of the request
			}
			return fp, rec, nil
		}
	}
	return Fingerprint(req.Method, req.Path, req.Query, req.Body), nil, nil
}

func (s *Service) claimParams(req Request, fp string) ClaimParams {
	return ClaimParams{
		Scope:       req.Scope,
		Key:         req.Key,
		Fingerprint: fp,
		Method:      strings.ToUpper(req.Method),
		Path:        req.Path,
		Now:         s.cfg.Now(),
		LockTTL:     s.cfg.LockTTL,
		Limit:       s.cfg.MaxKeys,
		EvictOldest: req.Policy.EvictOldest,
	}
}

// answer turns a live record that is finished or another request's into Do's answer: a
// replay, or why there is none.
func (s *Service) answer(rec *Record, fp string) (*Response, error) {
	switch {
	case rec.Fingerprint != fp:
		s.metrics.count(outcomeMismatch)
		return nil, ErrKeyMismatch
	case rec.State == StateDone:
		body, err := s.openBody(rec)
		if err != nil {
			s.metrics.count(outcomeNotKept)
			return nil, err
		}
		s.metrics.count(outcomeReplay)
		return &Response{Status: rec.Status, Header: rec.Header.Clone(), Body: body, Replayed: true, RunID: rec.RunID}, nil
	case rec.State == StateTaken:
		s.metrics.count(outcomeNotKept)
		return nil, ErrAnswerNotKept
	default:
		return nil, fmt.Errorf("idempotency key %q in unexpected state %q", rec.Key, rec.State)
	}
}

// passThrough runs fn without the key because the store failed (SPEC §4 rule 9). The body
// is never logged: it may hold secrets.
func (s *Service) passThrough(ctx context.Context, req Request, storeErr error, fn func(context.Context) (*Response, error)) (*Response, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	s.metrics.count(outcomeStoreDown)
	s.cfg.Logger.WarnContext(ctx, "idempotency store unreachable; request goes through without its key",
		"key", req.Key, "scope", req.Scope, "route", req.Method+" "+req.Path, "err", storeErr)
	return fn(ctx)
}

// run calls fn for the key claim took, then keeps or frees the key. The key is freed when
// fn panics, too, so that a retry need not wait for LockTTL.
func (s *Service) run(ctx context.Context, req Request, claim ClaimParams, fn func(context.Context) (*Response, error)) (resp *Response, err error) {
	s.metrics.count(outcomeNew)
	finished := false
	defer func() {
		if !finished {
			s.release(ctx, req)
		}
	}()
	resp, err = fn(ctx)
	finished = true
	if err == nil && resp == nil {
		err = errors.New("idempotency: fn returned neither a response nor an error")
	}
	if err != nil || !keep(resp.Status, req.Policy) {
		s.release(ctx, req)
		return resp, err
	}
	s.complete(ctx, req, claim, resp)
	return resp, nil
}

func keep(status int, p Policy) bool {
	return p.KeepFailures || (status >= 200 && status < 300)
}

// complete keeps resp; the answer goes out even when the store fails. The store write
// outlives a cancelled request: the work was done and its answer must be kept.
func (s *Service) complete(ctx context.Context, req Request, claim ClaimParams, resp *Response) {
	rec := s.kept(req, claim, resp)
	rec.ExpiresAt = s.cfg.Now().Add(s.cfg.TTL)
	if err := s.store.Complete(context.WithoutCancel(ctx), rec); err != nil {
		s.cfg.Logger.ErrorContext(ctx, "keeping idempotent answer failed",
			"key", req.Key, "scope", req.Scope, "route", req.Method+" "+req.Path, "err", err)
	} else {
		s.answers.put(req, claim.Fingerprint, rec)
	}
	s.finished(ctx, req)
}

// release frees the key of a request whose answer is not kept.
func (s *Service) release(ctx context.Context, req Request) {
	if err := s.store.Release(context.WithoutCancel(ctx), req.Scope, req.Key); err != nil {
		s.cfg.Logger.ErrorContext(ctx, "freeing idempotency key failed",
			"key", req.Key, "scope", req.Scope, "route", req.Method+" "+req.Path, "err", err)
	}
	s.finished(ctx, req)
}

// keptHeader is the part of an answer's header worth replaying.
func keptHeader(h http.Header) http.Header {
	kept := http.Header{}
	for _, name := range []string{"Content-Type", "Location"} {
		if v := h.Values(name); len(v) > 0 {
			kept[name] = v
		}
	}
	return kept
}
