package redisstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store/storecopy"
)

// TestImportRefuses: a record a Redis store has no place for is an error and nothing of
// its batch is written; a copy never drops what it cannot place.
func TestImportRefuses(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		record storecopy.Record
		err    string
	}{
		{"unknown kind", storecopy.Record{Kind: "schedules", Fields: map[string]any{"id": "x"}}, "unknown kind"},
		{"unknown counter", storecopy.Record{Kind: "counters", Fields: map[string]any{"name": "other", "value": int64(1)}}, "unknown counter"},
		{"payload field", storecopy.Record{Kind: "payloads", Fields: map[string]any{"seq": int64(1), "run_id": "r",
			"environment": "production", "token": "t", "payload": []byte(`{}`), "priority": int64(2)}}, `"priority"`},
		{"step field", storecopy.Record{Kind: "run_steps", Fields: map[string]any{"run_id": "r", "idx": int64(0),
			"data": []byte(`{}`), "extra": "x"}}, `"extra"`},
		{"hook without token", storecopy.Record{Kind: "hooks", Fields: map[string]any{"environment": "production", "run_id": "r"}}, "without token"},
		{"time before 1970", storecopy.Record{Kind: "runs", Fields: map[string]any{"id": "r", "created_at": int64(-1)}}, "before 1970"},
		{"time not a number", storecopy.Record{Kind: "runs", Fields: map[string]any{"id": "r", "created_at": "noon"}}, "no time"},
		{"value of no kind", storecopy.Record{Kind: "runs", Fields: map[string]any{"id": "r", "depth": 1.5}}, "cannot be copied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fresh(t)
			ok := storecopy.Record{Kind: tc.record.Kind, Fields: map[string]any{"name": "catalog_version", "value": int64(7)}}
			batch := []storecopy.Record{tc.record}
			if tc.record.Kind == "counters" {
				batch = []storecopy.Record{ok, tc.record}
			}
			err := s.ImportRecords(ctx, tc.record.Kind, batch)
			require.ErrorContains(t, err, tc.err)
			v, err := s.CatalogVersion(ctx)
			require.NoError(t, err)
			require.Zero(t, v, "nothing of the batch is written")
			n, err := s.CountRecords(ctx, "runs")
			require.NoError(t, err)
			require.Zero(t, n)
		})
	}
}
