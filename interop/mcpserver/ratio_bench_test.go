package mcpserver_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ratioRounds is how many alternating rounds BenchmarkMCPRatio splits each side's calls
// into at most: a burst of load on the shared machine then falls on both sides alike. A
// round holds at least ratioRoundCalls calls per worker, so that its ramp up and down (fewer
// calls in flight) stays a small part of it.
//
// ratioWarmCalls is how many calls each side makes on each transport before any case:
// until the process has made a few thousand calls, its heap grows and the garbage
// collector runs less often, which shortens the echo calls more than GoRunner's (the
// go-sdk client's garbage dominates them), so that the first cases measured read ratios
// lower than the process settles at.
const (
	ratioRounds     = 20
	ratioRoundCalls = 8
	ratioWarmCalls  = 4000
)

// BenchmarkMCPRatio measures issue #13's MCP goals as the ratio of p50 latencies, GoRunner
// against the bare mcp-go echo tool, over the same transport at the same concurrency. The
// two sides take turns in up to ratioRounds rounds, each side making its share of b.N calls
// in each, so that both see the same machine: on 2 shared cores, two benchmarks run one
// after the other differ by ±25% on their own. It reports echo-p50-µs, gorunner-p50-µs and
// ratio (gorunner ÷ echo).
//
// Cases: call (a tools/call of the 1-step workflow, no key), fresh_key (a new
// idempotencyKey every call) and replay (one key, every call but the first replays its
// kept answer). fresh_key keeps a key per call and a principal keeps at most 10,000: run it
// with a fixed -benchtime such as 1000x.
func BenchmarkMCPRatio(b *testing.B) {
	echo, gorunner := baselineSide(b), gorunnerSide(b)
	plain := func() map[string]any { return map[string]any{"n": 1} }
	for _, sd := range []side{echo, gorunner} {
		for _, s := range []*mcp.ClientSession{sd.http, sd.stdio} {
			if _, err := timedCalls(s, sd.tool, plain, 1, ratioWarmCalls); err != nil {
				b.Fatal(err)
			}
		}
	}
	var keys atomic.Int64
	fresh := func() map[string]any {
		return map[string]any{"n": 1, "idempotencyKey": fmt.Sprintf("ratio-%d", keys.Add(1))}
	}
	replay := func(key string) func() map[string]any {
		return func() map[string]any { return map[string]any{"n": 1, "idempotencyKey": key} }
	}
	http := func(sd side) *mcp.ClientSession { return sd.http }
	stdio := func(sd side) *mcp.ClientSession { return sd.stdio }
	for _, tc := range []struct {
		name    string
		session func(side) *mcp.ClientSession
		workers int
		args    func() map[string]any
	}{
		{"call/http_c1", http, 1, plain},
		{"call/http_c16", http, 16, plain},
		{"call/stdio_c1", stdio, 1, plain},
		{"call/stdio_c16", stdio, 16, plain},
		{"fresh_key/http_c1", http, 1, fresh},
		{"fresh_key/http_c16", http, 16, fresh},
		{"replay/http_c1", http, 1, replay("ratio-replay-http")},
		{"replay/stdio_c1", stdio, 1, replay("ratio-replay-stdio")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			sides := []side{echo, gorunner}
			took := make([][]time.Duration, len(sides))
			for i, sd := range sides {
				// Warm up, and make the replay's first call, outside the figures.
				if _, err := timedCalls(tc.session(sd), sd.tool, tc.args, tc.workers, 2*tc.workers); err != nil {
					b.Fatal(err)
				}
				took[i] = make([]time.Duration, 0, b.N)
			}
			rounds := max(1, min(ratioRounds, b.N/(ratioRoundCalls*tc.workers)))
			b.ResetTimer()
			for round := range rounds {
				n := b.N/rounds + min(1, max(0, b.N%rounds-round))
				for i, sd := range sides {
					d, err := timedCalls(tc.session(sd), sd.tool, tc.args, tc.workers, n)
					if err != nil {
						b.Fatal(err)
					}
					took[i] = append(took[i], d...)
				}
			}
			b.StopTimer()
			echoP50, gorunnerP50 := p50(took[0]), p50(took[1])
			b.ReportMetric(float64(echoP50)/float64(time.Microsecond), "echo-p50-µs")
			b.ReportMetric(float64(gorunnerP50)/float64(time.Microsecond), "gorunner-p50-µs")
			b.ReportMetric(float64(gorunnerP50)/float64(echoP50), "ratio")
		})
	}
}

// timedCalls makes n calls of tool from workers goroutines and returns each call's latency.
func timedCalls(s *mcp.ClientSession, tool string, args func() map[string]any, workers, n int) ([]time.Duration, error) {
	took := make([]time.Duration, n)
	errs := make([]error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n) && errs[w] == nil; i = next.Add(1) - 1 {
				a := args()
				start := time.Now()
				errs[w] = callOnce(s, tool, a)
				took[i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return took, nil
}

// p50 is the median of took; it sorts took.
func p50(took []time.Duration) time.Duration {
	if len(took) == 0 {
		return 0
	}
	slices.Sort(took)
	return took[len(took)/2]
}
