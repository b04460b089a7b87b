package idempotency

import (
	"context"
	"errors"
	"time"

	"github.com/gorunner/gorunner/events"
)

// finished wakes the waiters of req's key, here and, through Config.Events, elsewhere.
func (s *Service) finished(_ context.Context, req Request) {
	s.cfg.Events.Publish(events.Key(req.Scope, req.Key))
}

// await waits until deadline for the in-progress request holding req's key to finish. It
// answers with the replay (or why there is none), ErrInProgress at the deadline, or freed
// when the first request failed and the key is free to claim again.
func (s *Service) await(ctx context.Context, req Request, fp string, deadline time.Time) (resp *Response, freed bool, err error) {
	// Subscribe before reading, so that a finish between the read and the wait wakes us.
	woken := s.cfg.Events.Subscribe(events.Key(req.Scope, req.Key))
	defer woken.Close()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for expired := false; ; {
		rec, err := s.store.Get(ctx, req.Scope, req.Key, s.cfg.Now())
		switch {
		case errors.Is(err, ErrNotFound):
			return nil, true, nil
		case err == nil && (rec.State != StateInProgress || rec.Fingerprint != fp):
			s.answers.put(req, fp, rec)
			resp, err := s.answer(rec, fp)
			return resp, false, err
		case expired: // a read error (store down) counts as still in progress
			s.metrics.count(outcomeInProgress)
			return nil, false, ErrInProgress
		}
		select {
		case <-woken.C:
		case <-timer.C:
			expired = true
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}
