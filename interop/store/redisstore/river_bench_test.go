package redisstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store/pgstore/pgtest"
)

// noopArgs is the job of the River baseline: it does nothing.
type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

// noopWorker works noop jobs, calling done after each.
type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	done func()
}

func (w *noopWorker) Work(context.Context, *river.Job[noopArgs]) error {
	w.done()
	return nil
}

// benchRiver inserts b.N no-op jobs from submitters goroutines and waits until River (8
// workers, as the engine; its pgx driver) has worked them all, on the PostgreSQL of the
// other benchmarks: River's tables migrated (rivermigrate) into a schema of their own,
// dropped after. Its fetch cooldown and poll interval are cut to 1 ms and 10 ms, as
// asynq's check interval is, so that an idle fetcher's wait stays out of the figure.
func benchRiver(b *testing.B, submitters int) {
	ctx := context.Background()
	schema := pgtest.Schema(b)
	pool, err := pgxpool.NewWithConfig(ctx, pgtest.Config(b, schema))
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema})
	require.NoError(b, err)
	_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	require.NoError(b, err)

	var done atomic.Int64
	all := make(chan struct{})
	target := int64(b.N)
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{done: func() {
		if done.Add(1) == target {
			close(all)
		}
	}})
	client, err := river.NewClient(driver, &river.Config{
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 8}},
		Workers:       workers,
		Schema:        schema,
		FetchCooldown: time.Millisecond, FetchPollInterval: 10 * time.Millisecond,
	})
	require.NoError(b, err)
	require.NoError(b, client.Start(ctx))
	defer func() { require.NoError(b, client.Stop(ctx)) }()
	submitAll(b, submitters, all, func(int64) error {
		_, err := client.Insert(ctx, noopArgs{}, nil)
		return err
	})
}
