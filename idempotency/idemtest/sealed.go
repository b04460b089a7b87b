package idemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/leaktest"
)

// testSealedAnswers performs the attack on the backend: an answer carrying a secret, kept
// under Policy.Secret, is in no field of the stored record in any encoding; it replays byte
// for byte through any Service with the same secret key (another process, a restart); a
// Service with another key, or the sealed body moved to another key, answers
// ErrAnswerUnreadable and does nothing again. An answer without Policy.Secret is stored as
// it was.
func testSealedAnswers(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	raw := make([]byte, 32)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	secret := "wh_" + base64.RawURLEncoding.EncodeToString(raw)
	body := []byte(`{"data":{"url":"http://h/webhooks/` + secret + `","token":"` + secret + `"}}`)
	calls := 0
	fn := func(context.Context) (*idempotency.Response, error) {
		calls++
		return &idempotency.Response{Status: http.StatusCreated, Body: body,
			Header: http.Header{"Content-Type": {"application/json"}}}, nil
	}
	key := bytes.Repeat([]byte{7}, 32)
	service := func(key []byte) *idempotency.Service {
		svc, err := idempotency.New(s, &idempotency.Config{SecretKey: key, Now: func() time.Time { return base }})
		require.NoError(t, err)
		return svc
	}
	request := func(key string, p idempotency.Policy) idempotency.Request {
		return idempotency.Request{Scope: "p:seal", Key: key, Method: http.MethodPost,
			Path: "/api/workflows/w/webhook/rotate", Policy: p}
	}
	secretive := idempotency.Policy{Secret: true}

	svc := service(key)
	first, err := svc.Do(ctx, request("rot", secretive), fn)
	require.NoError(t, err)
	require.Equal(t, body, first.Body)
	stored, err := s.Get(ctx, "p:seal", "rot", base)
	require.NoError(t, err)
	requireAbsent(t, stored, raw, secret)

	for _, svc := range []*idempotency.Service{svc, service(key)} {
		replay, err := svc.Do(ctx, request("rot", secretive), fn)
		require.NoError(t, err)
		require.True(t, replay.Replayed)
		require.Equal(t, body, replay.Body, "a replay answers byte for byte")
		require.Equal(t, "application/json", replay.Header.Get("Content-Type"))
	}
	shown, err := svc.Key(ctx, "p:seal", "rot")
	require.NoError(t, err)
	require.Equal(t, body, shown.Body, "a key shows its answer in the clear")

	otherKey := service(bytes.Repeat([]byte{8}, 32))
	_, err = otherKey.Do(ctx, request("rot", secretive), fn)
	require.ErrorIs(t, err, idempotency.ErrAnswerUnreadable)
	require.ErrorIs(t, err, idempotency.ErrAnswerNotKept, "a 409: the key stays taken")
	shown, err = otherKey.Key(ctx, "p:seal", "rot")
	require.NoError(t, err)
	require.Equal(t, idempotency.StateTaken, shown.State)
	require.Nil(t, shown.Body)

	moved := request("moved", secretive)
	fp := idempotency.Fingerprint(moved.Method, moved.Path, moved.Query, moved.Body)
	res, err := s.Claim(ctx, idempotency.ClaimParams{Scope: moved.Scope, Key: moved.Key, Fingerprint: fp, Now: base, LockTTL: lockTTL})
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, res.Outcome)
	forged := *stored
	forged.Key, forged.Fingerprint = moved.Key, fp
	require.NoError(t, s.Complete(ctx, &forged))
	_, err = service(key).Do(ctx, moved, fn)
	require.ErrorIs(t, err, idempotency.ErrAnswerUnreadable, "a sealed answer opens under its own key only")
	require.Equal(t, 1, calls, "nothing was done again")

	_, err = svc.Do(ctx, request("plain", idempotency.Policy{}), fn)
	require.NoError(t, err)
	plain, err := s.Get(ctx, "p:seal", "plain", base)
	require.NoError(t, err)
	require.Equal(t, body, plain.Body, "an answer without Policy.Secret is kept as it was")
}

// requireAbsent requires that no field of rec holds secret (whose random bytes are raw) in
// any encoding (leaktest.RequireAbsent).
func requireAbsent(t *testing.T, rec *idempotency.Record, raw []byte, secret string) {
	t.Helper()
	header, err := json.Marshal(rec.Header)
	require.NoError(t, err)
	fields := bytes.Join([][]byte{[]byte(rec.Scope), []byte(rec.Key), []byte(rec.Fingerprint), []byte(rec.Method),
		[]byte(rec.Path), []byte(rec.RunID), header, rec.Body}, []byte{0})
	leaktest.RequireAbsent(t, fields, []byte(secret), raw)
}
