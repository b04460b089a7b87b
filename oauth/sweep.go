package oauth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// SweepInterval is how often, at most, expired grants and unused registered clients are
// deleted: lazily, by the requests that write (registration, token), so that no
// background loop is needed (docs/security.md, "OAuth for remote assistants").
const SweepInterval = 10 * time.Minute

// sweeper remembers when the next sweep is due.
type sweeper struct {
	mu   sync.Mutex
	next time.Time
}

// due reports whether a sweep is due at now, and if so marks the next one.
func (w *sweeper) due(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.Before(w.next) {
		return false
	}
	w.next = now.Add(SweepInterval)
	return true
}

// sweepIfDue sweeps when SweepInterval has passed since the last sweep; a failure is only
// logged, the next sweep tries again.
func (s *Server) sweepIfDue(ctx context.Context) {
	if !s.sweeper.due(s.cfg.Now()) {
		return
	}
	if err := s.Sweep(ctx); err != nil {
		s.log.ErrorContext(ctx, "sweeping expired OAuth grants and clients failed", "error", err)
	}
}

// Sweep deletes the grants whose refresh token expired, revoking their access tokens, and
// the registered clients that hold no grant UnusedClientTTL after their registration.
func (s *Server) Sweep(ctx context.Context) error {
	now := s.cfg.Now()
	gs, err := s.store.ListGrants(ctx, "")
	if err != nil {
		return fmt.Errorf("sweeping grants: %w", err)
	}
	inUse := map[string]bool{}
	var errs []error
	for _, g := range gs {
		if now.Before(g.RefreshExpiresAt) {
			inUse[g.ClientID] = true
			continue
		}
		if err := s.revokeGrant(ctx, g.ID); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, fmt.Errorf("sweeping grant %q: %w", g.ID, err))
		}
	}
	old, err := s.store.ClientsCreatedBefore(ctx, now.Add(-UnusedClientTTL), s.cfg.MaxClients)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("sweeping clients: %w", err))...)
	}
	for _, id := range old {
		if inUse[id] {
			continue
		}
		if err := s.store.DeleteClient(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, fmt.Errorf("sweeping client %q: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
