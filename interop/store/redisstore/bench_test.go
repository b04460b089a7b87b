// Package redisstore_test benchmarks the backends side by side, with asynq on the same
// Redis as a baseline; asynq is why this lives in the interop module.
package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
	"github.com/gorunner/gorunner/store/pgstore/pgtest"
	"github.com/gorunner/gorunner/store/redisstore/redistest"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// benchStore is what the benchmarks need of a backend.
type benchStore interface {
	catalog.Store
	idempotency.Store
	runner.Store
}

// backends opens each backend fresh for one benchmark: the embedded SQLite file, Redis and
// PostgreSQL (a schema of its own).
var backends = []struct {
	name string
	open func(b *testing.B) benchStore
}{
	{"sqlite", func(b *testing.B) benchStore {
		s, err := sqlitestore.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
		require.NoError(b, err)
		b.Cleanup(func() { require.NoError(b, s.Close()) })
		return s
	}},
	{"redis", func(b *testing.B) benchStore {
		s, _, _ := redistest.Open(b)
		return s
	}},
	{"postgres", func(b *testing.B) benchStore {
		s, _ := pgtest.Open(b)
		return s
	}},
}

const benchDef = `{"name": "bench", "input": {"type": "object"}, "steps": [
  {"id": "a", "set": {"n": "${{ input.n }}"}},
  {"id": "b", "set": "${{ steps.a.output.n + 1 }}"},
  {"id": "c", "set": {"done": "${{ steps.b.output }}"}}]}`

// started is a catalog with the bench workflow published and an engine working it.
func started(b *testing.B, st benchStore) (*catalog.Service, *runner.Engine) {
	ctx := context.Background()
	cat, err := catalog.New(st, &catalog.Config{SecretKey: make([]byte, 32)})
	require.NoError(b, err)
	_, err = cat.Create(ctx, []byte(benchDef))
	require.NoError(b, err)
	_, _, err = cat.Publish(ctx, "bench", auth.Local())
	require.NoError(b, err)
	e, err := runner.New(st, cat, cat, &runner.Config{Concurrency: 8})
	require.NoError(b, err)
	require.NoError(b, e.Start(ctx))
	b.Cleanup(func() { require.NoError(b, e.Stop(context.Background())) })
	return cat, e
}

// BenchmarkBackends compares the backends in one run: runs/s of a 3-step workflow
// (submitted all at once, until all completed), MCP tools/call latency of the same
// workflow, and, as baselines, asynq working as many no-op tasks on the same Redis and
// River as many no-op jobs on the same PostgreSQL.
func BenchmarkBackends(b *testing.B) {
	for _, submitters := range []int{1, 8} {
		suffix := ""
		if submitters > 1 {
			suffix = fmt.Sprintf("_c%d", submitters)
		}
		for _, be := range backends {
			b.Run("runs/"+be.name+suffix, func(b *testing.B) { benchRuns(b, be.open(b), submitters) })
		}
		b.Run("runs/asynq_noop"+suffix, func(b *testing.B) { benchAsynq(b, submitters) })
		b.Run("runs/river_noop"+suffix, func(b *testing.B) { benchRiver(b, submitters) })
	}
	for _, be := range backends {
		b.Run("tools_call/"+be.name, func(b *testing.B) { benchToolsCall(b, be.open(b)) })
	}
}

func benchRuns(b *testing.B, st benchStore, submitters int) {
	_, e := started(b, st)
	runnertest.BenchRuns(b, e, "bench", submitters)
}

// benchAsynq enqueues b.N no-op tasks from submitters goroutines and waits until asynq
// (8 workers, as the engine) has processed them all, on the Redis of the other benchmarks.
// An idle asynq worker looks for tasks every TaskCheckInterval (default 1 s); 10 ms keeps
// that out of the figure.
func benchAsynq(b *testing.B, submitters int) {
	opts, err := redis.ParseURL(redistest.URL(b))
	require.NoError(b, err)
	conn := asynq.RedisClientOpt{Addr: opts.Addr, DB: opts.DB, Password: opts.Password}
	queue := "bench-" + redistest.RandomHex(b)
	b.Cleanup(func() { deleteAsynqQueue(b, opts, queue) })
	var done atomic.Int64
	all := make(chan struct{})
	target := int64(b.N)
	srv := asynq.NewServer(conn, asynq.Config{Concurrency: 8, Queues: map[string]int{queue: 1},
		TaskCheckInterval: 10 * time.Millisecond, LogLevel: asynq.ErrorLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc("noop", func(context.Context, *asynq.Task) error {
		if done.Add(1) == target {
			close(all)
		}
		return nil
	})
	require.NoError(b, srv.Start(mux))
	defer srv.Shutdown()
	client := asynq.NewClient(conn)
	defer client.Close()
	submitAll(b, submitters, all, func(i int64) error {
		_, err := client.Enqueue(asynq.NewTask("noop", []byte(fmt.Sprint(i))), asynq.Queue(queue))
		return err
	})
}

// submitAll calls submit for 0…b.N-1 from submitters goroutines, waits until all is
// closed (the baseline worked the last job), and reports jobs worked per second as runs/s.
func submitAll(b *testing.B, submitters int, all <-chan struct{}, submit func(i int64) error) {
	var next atomic.Int64
	errs := make([]error, submitters)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range submitters {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(b.N) && errs[w] == nil; i = next.Add(1) - 1 {
				errs[w] = submit(i)
			}
		})
	}
	wg.Wait()
	require.NoError(b, errors.Join(errs...))
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		b.Fatal("the baseline did not work every job")
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
}

func deleteAsynqQueue(b *testing.B, opts *redis.Options, queue string) {
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, "asynq:{"+queue+"}*", 1000).Iterator()
	for iter.Next(ctx) {
		require.NoError(b, rdb.Del(ctx, iter.Val()).Err())
	}
	require.NoError(b, rdb.SRem(ctx, "asynq:queues", queue).Err())
}

// benchToolsCall measures one MCP tools/call of the bench workflow over streamable HTTP,
// from the request to the completed run's result.
func benchToolsCall(b *testing.B, st benchStore) {
	session := toolsSession(b, st)
	b.ResetTimer()
	for b.Loop() {
		callBench(b, session)
	}
}

// callBench makes one tools/call of the bench workflow, which must succeed.
func callBench(b *testing.B, session *mcp.ClientSession) {
	res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "bench", Arguments: map[string]any{"n": 1}})
	require.NoError(b, err)
	require.False(b, res.IsError)
}

// toolsSession serves the bench workflow of st over MCP's streamable HTTP, with an engine
// working it, and answers a client session of it.
func toolsSession(b *testing.B, st benchStore) *mcp.ClientSession {
	cat, e := started(b, st)
	idem, err := idempotency.New(st, nil)
	require.NoError(b, err)
	srv, err := mcpserver.New(mcpserver.Deps{Catalog: cat, Engine: e, Idempotency: idem}, nil)
	require.NoError(b, err)
	require.NoError(b, srv.Start(context.Background()))
	b.Cleanup(func() { require.NoError(b, srv.Stop(context.Background())) })
	h := srv.HTTPHandler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), auth.Local())))
	}))
	b.Cleanup(hs.Close)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	session, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}, nil)
	require.NoError(b, err)
	b.Cleanup(func() { _ = session.Close() })
	return session
}
