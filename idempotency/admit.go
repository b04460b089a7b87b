package idempotency

import (
	"context"
	"errors"
	"fmt"
)

// ErrSplit, returned by a Prepared's Write, says the work cannot be committed in one write
// with its key (an atomic-start token owned by another run, answered with that run): Admit
// then answers the request through Do, claim → Fallback → complete.
var ErrSplit = errors.New("idempotency: the request cannot be admitted in one write")

// KeyWrite is a key's claim and the answer to keep under it, for a caller's store to commit
// in the same write as the work the request does (SPEC §4, ARCHITECTURE "admission is one
// transaction"). The store checks the key as Claim does; when it is free, it writes Answer
// (State Done or Taken) instead of an in-progress claim, so the key is never in progress.
type KeyWrite struct {
	Claim  ClaimParams
	Answer *Record
}

// Prepared is a request's work built in memory and not yet written: the answer a new
// admission gives (with the RunID it names) and the one write that commits both.
type Prepared struct {
	// Answer is what the request answers when Write commits.
	Answer *Response
	// Write commits the work, and key when not nil, in one store write. It reports the key
	// as Claim does: Claimed when everything was written; Existing or LimitReached when the
	// key is live or its scope full, and then nothing was written. ErrSplit: see there.
	Write func(ctx context.Context, key *KeyWrite) (ClaimResult, error)
}

// Admission is one request that does its work in a single store write with its key.
type Admission struct {
	// Prepare checks the request and builds its work without writing. Its error is the
	// request's answer and nothing is written (under Policy.KeepFailures the failure is
	// kept through Do and Fallback).
	Prepare func(ctx context.Context) (*Prepared, error)
	// Fallback does the request the way Do's fn does, for what cannot be one write (see
	// ErrSplit and Prepare), for a retry of a request still in progress on Do's path, and
	// without the key when the store cannot be reached (SPEC §4 rule 9).
	Fallback func(ctx context.Context) (*Response, error)
}

// Admit does req as one write: a new key, the work and the kept answer commit together,
// so that a crash leaves either nothing or all three. A live key answers as Do does
// (replay, ErrKeyMismatch, ErrAnswerNotKept), a full scope with a *LimitError, and a key
// still in progress on Do's path is awaited through Do.
//
// A replay this Service holds reads no store. In a scope whose answers are held (see
// holds) a key not held is most likely fresh: Admit prepares and writes at once, and the
// write reports a live key, which is answered so; the key is read only when Prepare or
// the write fails, so that a kept answer still replays. In other scopes (webhooks, whose
// retries are common) the key is read first and a replay prepares nothing.
func (s *Service) Admit(ctx context.Context, req Request, a Admission) (*Response, error) {
	claim := s.claimParams(req, "")
	fp, held, err := s.lookup(req, claim.Now)
	switch {
	case err != nil:
		return nil, err
	case held != nil:
		return s.answer(held, fp)
	}
	claim.Fingerprint = fp
	readFirst := !holds(req)
	if readFirst {
		if resp, answered, err := s.stored(ctx, req, claim, a); answered {
			return resp, err
		}
	}
	prep, err := a.Prepare(ctx)
	if err != nil {
		if !readFirst {
			if resp, answered, err := s.stored(ctx, req, claim, a); answered {
				return resp, err
			}
		}
		if req.Policy.KeepFailures {
			return s.Do(ctx, req, a.Fallback)
		}
		return nil, err
	}
	return s.commit(ctx, req, claim, prep, a)
}

// stored reads req's key from the store and answers req when the key is live, as existing
// does, or when the store cannot be reached, through a.Fallback without the key (SPEC §4
// rule 9). A key missing, expired or abandoned leaves req unanswered (answered false).
func (s *Service) stored(ctx context.Context, req Request, claim ClaimParams, a Admission) (resp *Response, answered bool, err error) {
	rec, err := s.store.Get(ctx, req.Scope, req.Key, claim.Now)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, false, nil
	case err != nil:
		resp, err = s.passThrough(ctx, req, err, a.Fallback)
		return resp, true, err
	case rec.Abandoned(claim.Now):
		return nil, false, nil
	}
	resp, err = s.existing(ctx, req, rec, claim.Fingerprint, a)
	return resp, true, err
}

// commit makes prep's one write with the key and answers from what the store reports. In a
// scope whose answers are held Admit did not read the key before: a failed write then reads
// it, as Admit would have first, so that a store that cannot be reached lets the request
// through without its key (SPEC §4 rule 9), and a key found live answers.
func (s *Service) commit(ctx context.Context, req Request, claim ClaimParams, prep *Prepared, a Admission) (*Response, error) {
	var key *KeyWrite
	if keep(prep.Answer.Status, req.Policy) {
		key = &KeyWrite{Claim: claim, Answer: s.kept(req, claim, prep.Answer)}
	}
	// The write outlives a cancelled request, as Do's complete does: it is the admission.
	res, err := prep.Write(context.WithoutCancel(ctx), key)
	switch {
	case errors.Is(err, ErrSplit):
		return s.Do(ctx, req, a.Fallback)
	case err != nil && holds(req):
		if resp, answered, err := s.stored(ctx, req, claim, a); answered {
			return resp, err
		}
		return nil, err
	case err != nil:
		return nil, err
	}
	switch res.Outcome {
	case Claimed:
		s.metrics.count(outcomeNew)
		if key != nil {
			s.answers.put(req, claim.Fingerprint, key.Answer)
		}
		return prep.Answer, nil
	case LimitReached:
		s.metrics.count(outcomeCap)
		return nil, newLimitError(claim.Now, res.Oldest)
	case Existing:
		return s.existing(ctx, req, res.Record, claim.Fingerprint, a)
	}
	return nil, fmt.Errorf("admitting with idempotency key: unknown outcome %d", res.Outcome)
}

// existing answers from a live record: a retry of a request still in progress on Do's
// path waits through Do; anything else is answered at once.
func (s *Service) existing(ctx context.Context, req Request, rec *Record, fp string, a Admission) (*Response, error) {
	if rec.State == StateInProgress && rec.Fingerprint == fp {
		return s.Do(ctx, req, a.Fallback)
	}
	s.answers.put(req, fp, rec)
	return s.answer(rec, fp)
}

// kept is the record an answer is kept as: the whole answer, its body sealed under
// Policy.Secret, or only that the key is taken when the body is over MaxBody (SPEC §4
// rule 8).
func (s *Service) kept(req Request, claim ClaimParams, resp *Response) *Record {
	rec := &Record{
		Scope:       req.Scope,
		Key:         req.Key,
		Fingerprint: claim.Fingerprint,
		Method:      claim.Method,
		Path:        claim.Path,
		RunID:       resp.RunID,
		State:       StateDone,
		Status:      resp.Status,
		Header:      keptHeader(resp.Header),
		Body:        resp.Body,
		CreatedAt:   claim.Now,
		ExpiresAt:   claim.Now.Add(s.cfg.TTL),
	}
	if len(resp.Body) > s.cfg.MaxBody {
		rec.State, rec.Header, rec.Body = StateTaken, nil, nil
	}
	if req.Policy.Secret {
		s.sealBody(rec)
	}
	return rec
}
