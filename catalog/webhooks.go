package catalog

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/internal/seal"
)

// Purposes of the keys derived from the secret key for webhook tokens (seal.Derive).
const (
	webhookLookupPurpose = "gorunner webhook lookup v1"
	webhookTokenPurpose  = "gorunner webhook token v1"
)

// webhookKeys keep webhook tokens out of the store in the clear: the store indexes a keyed
// digest of each token, which reveals nothing of it, and keeps the token sealed, bound to
// its workflow's ID, for the address to be shown.
type webhookKeys struct {
	lookup []byte
	box    *seal.Box
}

func newWebhookKeys(secret []byte) (*webhookKeys, error) {
	box, err := seal.For(secret, webhookTokenPurpose)
	if err != nil {
		return nil, fmt.Errorf("catalog: webhook key: %w", err)
	}
	return &webhookKeys{lookup: seal.Derive(secret, webhookLookupPurpose), box: box}, nil
}

// digest is the lookup digest of token: HMAC-SHA256 under the lookup key, base64url.
func (k *webhookKeys) digest(token string) string {
	m := hmac.New(sha256.New, k.lookup)
	m.Write([]byte(token))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// keep returns what the store keeps of token, the webhook token of the workflow with that
// ID: its digest, and the token sealed bound to the workflow ID.
func (k *webhookKeys) keep(token, workflowID string) (string, []byte, error) {
	sealed, err := k.box.Seal([]byte(token), []byte(workflowID))
	if err != nil {
		return "", nil, fmt.Errorf("sealing webhook token of workflow %s: %w", workflowID, err)
	}
	return k.digest(token), sealed, nil
}

// NewWebhookToken returns a fresh webhook token: 256 random bits, URL-safe.
func NewWebhookToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making webhook token: %w", err)
	}
	return "wh_" + base64.RawURLEncoding.EncodeToString(b), nil
}

// WebhookToken returns the token of w's webhook, for its address: w.WebhookSealed opened,
// or, for a workflow SealWebhooks has not upgraded yet, the plaintext token it holds.
func (s *Service) WebhookToken(w *Workflow) (string, error) {
	if len(w.WebhookSealed) == 0 {
		return w.WebhookDigest, nil
	}
	token, err := s.webhooks.box.Open(w.WebhookSealed, []byte(w.ID))
	if err != nil {
		return "", fmt.Errorf("opening webhook token of workflow %s: %w", w.ID, err)
	}
	return string(token), nil
}

// GetByWebhook finds a workflow by its webhook token, looking its digest up. A token no
// digest answers to may still be the plaintext token of a workflow an older process
// stored and SealWebhooks has not upgraded yet; only such a workflow answers to it, so a
// digest read from the store is no token.
func (s *Service) GetByWebhook(ctx context.Context, token string) (*Workflow, error) {
	w, err := s.store.GetWorkflowByWebhook(ctx, s.webhooks.digest(token))
	if !errors.Is(err, ErrNotFound) {
		return w, err
	}
	w, err = s.store.GetWorkflowByWebhook(ctx, token)
	if err != nil {
		return nil, err
	}
	if len(w.WebhookSealed) > 0 || subtle.ConstantTimeCompare([]byte(w.WebhookDigest), []byte(token)) != 1 {
		return nil, fmt.Errorf("getting workflow by webhook: %w", ErrNotFound)
	}
	return w, nil
}

// RotateWebhook gives a workflow a new webhook token, which it returns; the old one stops
// working at once.
func (s *Service) RotateWebhook(ctx context.Context, idOrName string) (string, error) {
	w, err := s.store.GetWorkflow(ctx, idOrName)
	if err != nil {
		return "", err
	}
	token, err := NewWebhookToken()
	if err != nil {
		return "", err
	}
	digest, sealed, err := s.webhooks.keep(token, w.ID)
	if err != nil {
		return "", err
	}
	if err := s.store.RotateWebhook(ctx, w.ID, digest, sealed, s.now()); err != nil {
		return "", err
	}
	return token, nil
}

// SealWebhooks upgrades every live workflow stored with its plaintext webhook token (by a
// GoRunner before tokens were sealed): the store keeps its digest and the token sealed
// instead, and its address stays the same. A process calls it at start, once its store is
// open; it returns how many workflows it upgraded. A workflow deleted or rotated meanwhile
// is left as it is.
func (s *Service) SealWebhooks(ctx context.Context) (int, error) {
	upgraded := 0
	p := ListWorkflowsParams{Page: Page{Limit: limits.MaxPage}}
	for {
		ws, next, err := s.store.ListWorkflows(ctx, p)
		if err != nil {
			return upgraded, fmt.Errorf("sealing webhook tokens: %w", err)
		}
		for _, w := range ws {
			if len(w.WebhookSealed) > 0 {
				continue
			}
			token := w.WebhookDigest
			digest, sealed, err := s.webhooks.keep(token, w.ID)
			if err != nil {
				return upgraded, err
			}
			err = s.store.SealWebhook(ctx, w.ID, token, digest, sealed)
			switch {
			case err == nil:
				upgraded++
			case !errors.Is(err, ErrNotFound):
				return upgraded, fmt.Errorf("sealing webhook token of workflow %s: %w", w.ID, err)
			}
		}
		if next == "" {
			return upgraded, nil
		}
		p.Cursor = next
	}
}
