package idemtest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/idempotency"
)

// Process is what one process sharing a store has: its store handle and its transport.
type Process struct {
	Store  idempotency.Store
	Events events.Transport
}

// crossWait bounds the test below the bus's first resync, so that only A's notice, not
// a resync, can wake B in time; a retry left to its in-progress wait would take a minute.
const crossWait = events.ResyncInterval * 9 / 10

// RunCrossProcess checks that a retry waiting on process B for a key that process A holds
// wakes when A completes the key: A's bus carries events.Key to B's through the store's
// transport. open returns two processes sharing one fresh store.
func RunCrossProcess(t *testing.T, open func(t *testing.T) (a, b Process)) {
	pa, pb := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), crossWait)
	defer cancel()
	watched := &claimWatch{Store: pb.Store, existing: make(chan struct{}, 1)}
	svcA, svcB := service(t, pa.Store, pa.Events), service(t, watched, pb.Events)

	req := idempotency.Request{Scope: "p:x", Key: "k", Method: http.MethodPost, Path: "/api/runs", Body: []byte(`{}`)}
	entered, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := svcA.Do(ctx, req, func(context.Context) (*idempotency.Response, error) {
			close(entered)
			<-release
			return &idempotency.Response{Status: http.StatusCreated, Body: []byte("first")}, nil
		})
		first <- err
	}()
	<-entered
	retry := make(chan *idempotency.Response, 1)
	go func() {
		resp, err := svcB.Do(ctx, req, func(context.Context) (*idempotency.Response, error) {
			return &idempotency.Response{Status: http.StatusOK, Body: []byte("second")}, nil
		})
		require.NoError(t, err)
		retry <- resp
	}()
	<-watched.existing // B found the key in progress and waits
	close(release)
	require.NoError(t, <-first)
	select {
	case resp := <-retry:
		require.True(t, resp.Replayed)
		require.Equal(t, "first", string(resp.Body))
	case <-ctx.Done():
		t.Fatal("the retry on B was not woken by A's completion")
	}
}

// service builds a Service whose retries wait a minute, on a bus started over transport.
func service(t *testing.T, st idempotency.Store, transport events.Transport) *idempotency.Service {
	t.Helper()
	bus := events.New(transport, nil)
	require.NoError(t, bus.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, bus.Stop(context.Background())) })
	svc, err := idempotency.New(st, &idempotency.Config{InProgressWait: time.Minute, Events: bus})
	require.NoError(t, err)
	return svc
}

// claimWatch is a store that tells when a claim finds its key already taken.
type claimWatch struct {
	idempotency.Store
	existing chan struct{}
}

func (w *claimWatch) Claim(ctx context.Context, p idempotency.ClaimParams) (idempotency.ClaimResult, error) {
	res, err := w.Store.Claim(ctx, p)
	if err == nil && res.Outcome == idempotency.Existing {
		select {
		case w.existing <- struct{}{}:
		default:
		}
	}
	return res, err
}
