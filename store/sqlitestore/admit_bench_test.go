//go:build unix

package sqlitestore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
)

// BenchmarkAdmitEnded admits, serially, 1-step runs written already ended (a tools/call at
// c=1 on the fast path), without a key and with a fresh one kept beside the run in the
// same write (issue #13's fresh idempotencyKey). cpu-µs/op is the process's CPU per
// admission, which a busy machine disturbs less than the elapsed time; wal-frames/op the
// pages each commit appends to the WAL (its main cost), counted over the first
// framesCounted admissions, before an automatic checkpoint can start the WAL over.
func BenchmarkAdmitEnded(b *testing.B) {
	for _, keyed := range []bool{false, true} {
		b.Run(fmt.Sprint("keyed=", keyed), func(b *testing.B) {
			s, path := openT(b)
			ctx := context.Background()
			def := json.RawMessage(`{"input":{"type":"object"},"name":"bench","steps":[{"id":"a","set":{"n":"${{ input.n }}"}}]}`)
			wf := uuid.Must(uuid.NewV7()).String()
			at := time.Now().UTC()
			require.NoError(b, s.CreateWorkflow(ctx, &catalog.Workflow{ID: wf, Name: "bench", Rev: 1, WebhookDigest: "wh",
				Definition: def, CreatedAt: at, UpdatedAt: at}))
			v, _, err := s.Publish(ctx, wf, "h", auth.Local(), at)
			require.NoError(b, err)
			_, err = s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
			require.NoError(b, err)
			frames := 0
			cpu := processCPU(b)
			b.ResetTimer()
			for i := range b.N {
				if i == framesCounted {
					frames = walFrames(b, path)
				}
				now := time.Now().UTC()
				r := &runner.Run{
					ID: uuid.Must(uuid.NewV7()).String(), WorkflowID: wf, Workflow: "bench", Version: 1, StartedBy: "p:bench",
					Environment: runner.EnvProduction, Status: runner.StatusCompleted, Input: json.RawMessage(`{"n":1}`),
					Output: json.RawMessage(`{"n":1}`), CreatedAt: now, StartedAt: &now, FinishedAt: &now, Definition: v.Definition,
					Steps: []*runner.StepRecord{{ID: "a", StepID: uuid.NewString(), Status: runner.StepCompleted, Attempts: 1,
						Output: json.RawMessage(`{"n":1}`), StartedAt: &now, FinishedAt: &now}},
				}
				p := runner.CreateRunParams{Run: r}
				if keyed {
					claim := idempotency.ClaimParams{Scope: "p:bench", Key: fmt.Sprint("k-", i), Fingerprint: "fp",
						Method: http.MethodPost, Path: "/api/workflows/bench/runs", Now: now, LockTTL: time.Minute, Limit: 10_000_000}
					p.Key = &idempotency.KeyWrite{Claim: claim, Answer: &idempotency.Record{Scope: claim.Scope, Key: claim.Key,
						Fingerprint: "fp", Method: claim.Method, Path: claim.Path, RunID: r.ID, State: idempotency.StateDone,
						Status: http.StatusOK, Body: []byte(`{"data":{"id":"` + r.ID + `","status":"completed","output":{"n":1}}}`),
						CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}}
				}
				res, err := s.CreateRun(ctx, p)
				if err != nil || res.Outcome != idempotency.Claimed && keyed {
					b.Fatal(err, res.Outcome)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
			if frames > 0 {
				b.ReportMetric(float64(frames)/framesCounted, "wal-frames/op")
			}
		})
	}
}

const framesCounted = 50

// walFrames is how many frames the WAL at dbPath+"-wal" holds, from its size.
func walFrames(b *testing.B, dbPath string) int {
	fi, err := os.Stat(dbPath + "-wal")
	require.NoError(b, err)
	const header, frameHeader, page = 32, 24, 4096
	return int((fi.Size() - header) / (frameHeader + page))
}
