package mcpserver_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/mcpserver"
)

// benchDef is the workflow GoRunner's side of the call benchmarks runs: one set step.
const benchDef = `{"name":"bench","input":{"type":"object","properties":{"n":{"type":"integer"}}},"steps":[{"id":"s","set":"${{ input.n }}"}]}`

// echoServer is the baseline: a bare mcp-go server whose n tools answer with their
// arguments, paginated as GoRunner's server is by default.
func echoServer(n int) *server.MCPServer {
	return echoServerPaged(n, mcpserver.DefaultPageSize)
}

// echoServerPaged is echoServer with pages of page tools.
func echoServerPaged(n, page int) *server.MCPServer {
	s := server.NewMCPServer("echo", "1", server.WithToolCapabilities(true), server.WithPaginationLimit(page))
	echo := func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultJSON(req.GetArguments())
	}
	tools := make([]server.ServerTool, n)
	for i := range tools {
		name := "echo"
		if n > 1 {
			name = fmt.Sprintf("echo-%05d", i)
		}
		tools[i] = server.ServerTool{Tool: mcpgo.NewTool(name, mcpgo.WithNumber("n")), Handler: echo}
	}
	s.AddTools(tools...)
	return s
}

// benchClient connects the go-sdk client over t and closes the session at the end.
func benchClient(b *testing.B, t mcp.Transport) *mcp.ClientSession {
	b.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	s, err := client.Connect(context.Background(), t, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// httpSession serves h over streamable HTTP and connects to it.
func httpSession(b *testing.B, h *server.MCPServer) *mcp.ClientSession {
	b.Helper()
	srv := httptest.NewServer(server.NewStreamableHTTPServer(h))
	b.Cleanup(srv.Close)
	return benchClient(b, &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1})
}

// stdioSession connects to serve, which reads requests from in and writes answers to out,
// over a pair of in-process pipes, as a client talks to `gorunner mcp`.
func stdioSession(b *testing.B, serve func(ctx context.Context, in io.Reader, out io.Writer) error) *mcp.ClientSession {
	b.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, inR, outW) }()
	s := benchClient(b, &mcp.IOTransport{Reader: outR, Writer: inW})
	b.Cleanup(func() {
		cancel()
		_ = inW.Close()
		_ = outR.Close()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.ErrClosedPipe) {
			b.Error(err)
		}
	})
	return s
}

// concurrently performs op b.N times from workers goroutines. Besides the time per op it
// reports cpu-µs/op, the CPU time the whole process (client, server, engine, GC) spent per
// op, which a busy machine disturbs less than the elapsed time.
func concurrently(b *testing.B, workers int, op func() error) {
	b.Helper()
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	cpuBefore, measured := processCPU()
	b.ResetTimer()
	for w := range workers {
		wg.Go(func() {
			for errs[w] == nil && next.Add(1) <= int64(b.N) {
				errs[w] = op()
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	if cpuAfter, ok := processCPU(); measured && ok {
		b.ReportMetric(float64(cpuAfter-cpuBefore)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	}
}

// callOnce calls a tool and wants a result that is not an error.
func callOnce(s *mcp.ClientSession, name string, args map[string]any) error {
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("%s answered with an error: %s", name, text(res))
	}
	return nil
}

// side is one server of a benchmark: its two transports and the tool to call.
type side struct {
	name        string
	http, stdio *mcp.ClientSession
	tool        string
}

func baselineSide(b *testing.B) side {
	h := echoServer(1)
	return side{name: "baseline", tool: "echo", http: httpSession(b, h), stdio: stdioSession(b, func(ctx context.Context, in io.Reader, out io.Writer) error {
		return server.NewStdioServer(h).Listen(ctx, in, out)
	})}
}

func gorunnerSide(b *testing.B) side {
	f := newFixtureConfig(b, nil, benchDef)
	http, _ := f.connect("")
	return side{name: "gorunner", tool: "bench", http: http, stdio: stdioSession(b, func(ctx context.Context, in io.Reader, out io.Writer) error {
		return f.mcp.ServeStdio(ctx, auth.Local(), in, out)
	})}
}

// BenchmarkMCPCall compares a tools/call of GoRunner's 1-step workflow, which starts a
// durable run and waits for it, with a bare mcp-go echo tool, over both transports.
func BenchmarkMCPCall(b *testing.B) {
	for _, sd := range []side{baselineSide(b), gorunnerSide(b)} {
		for _, tr := range []struct {
			name    string
			session *mcp.ClientSession
		}{{"http", sd.http}, {"stdio", sd.stdio}} {
			for _, workers := range []int{1, 16} {
				b.Run(fmt.Sprintf("%s/%s_c%d", sd.name, tr.name, workers), func(b *testing.B) {
					concurrently(b, workers, func() error { return callOnce(tr.session, sd.tool, map[string]any{"n": 1}) })
				})
			}
		}
	}
}

// BenchmarkMCPReplay repeats one keyed call: after the first, every call is a replay that
// reads the kept answer and the run's state, and starts nothing.
func BenchmarkMCPReplay(b *testing.B) {
	sd := gorunnerSide(b)
	args := map[string]any{"n": 1, "idempotencyKey": "bench-replay"}
	for _, tr := range []struct {
		name    string
		session *mcp.ClientSession
	}{{"http_c1", sd.http}, {"stdio_c1", sd.stdio}} {
		b.Run(tr.name, func(b *testing.B) {
			if err := callOnce(tr.session, sd.tool, args); err != nil {
				b.Fatal(err)
			}
			concurrently(b, 1, func() error { return callOnce(tr.session, sd.tool, args) })
		})
	}
}

// BenchmarkMCPKeyedCall calls the 1-step workflow with a fresh idempotencyKey each time
// (a new run admitted with its key and kept answer), beside the bare echo tool, over HTTP.
// Run it with a fixed -benchtime (e.g. 300x): every call keeps a key, and a principal keeps
// at most 10,000.
func BenchmarkMCPKeyedCall(b *testing.B) {
	var keys atomic.Int64
	for _, sd := range []side{baselineSide(b), gorunnerSide(b)} {
		for _, workers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/http_c%d", sd.name, workers), func(b *testing.B) {
				concurrently(b, workers, func() error {
					return callOnce(sd.http, sd.tool, map[string]any{"n": 1, "idempotencyKey": fmt.Sprintf("k-%d", keys.Add(1))})
				})
			})
		}
	}
}

// BenchmarkMCPToolsList pages through tools/list once per iteration: GoRunner with
// scaleWorkflows published workflows beside a bare mcp-go server with as many echo tools.
func BenchmarkMCPToolsList(b *testing.B) {
	start := time.Now()
	f := newFixtureConfig(b, &mcpserver.Config{ListLimit: scaleWorkflows}, scaleDefs(scaleWorkflows)...)
	b.Logf("published %d workflows and loaded their tools in %v", scaleWorkflows, time.Since(start))
	gorunner, _ := f.connect("")
	for _, tc := range []struct {
		name    string
		session *mcp.ClientSession
		tools   int
	}{
		{"baseline", httpSession(b, echoServer(scaleWorkflows)), scaleWorkflows},
		{"gorunner", gorunner, scaleWorkflows + 4},
	} {
		b.Run(fmt.Sprintf("%s/http_%d", tc.name, scaleWorkflows), func(b *testing.B) {
			concurrently(b, 1, func() error {
				names, _, err := listPages(context.Background(), tc.session)
				if err == nil && len(names) != tc.tools {
					err = fmt.Errorf("listed %d tools, want %d", len(names), tc.tools)
				}
				return err
			})
		})
	}
}

// BenchmarkMCPToolsListPage asks for one tools/list page (the one after the middle tool)
// per iteration: pages of 10 at 10 and at scaleWorkflows tools (the same page, so the same
// cost when a page does not grow with the tool set), and the default page at
// scaleWorkflows; GoRunner beside a bare mcp-go server with as many echo tools and the
// same page size. p50-ms is the median page's latency.
func BenchmarkMCPToolsListPage(b *testing.B) {
	for _, tc := range []struct{ tools, page int }{{10, 10}, {scaleWorkflows, 10}, {scaleWorkflows, mcpserver.DefaultPageSize}} {
		f := newFixtureConfig(b, &mcpserver.Config{ListLimit: tc.tools, PageSize: tc.page}, scaleDefs(tc.tools)...)
		gorunner, _ := f.connect("")
		for _, sd := range []struct {
			name, middle string
			session      *mcp.ClientSession
		}{
			{"baseline", fmt.Sprintf("echo-%05d", tc.tools/2), httpSession(b, echoServerPaged(tc.tools, tc.page))},
			{"gorunner", fmt.Sprintf("wf-%05d", tc.tools/2), gorunner},
		} {
			b.Run(fmt.Sprintf("%s/http_%d_page%d", sd.name, tc.tools, tc.page), func(b *testing.B) {
				cursor := base64.StdEncoding.EncodeToString([]byte(sd.middle))
				var mu sync.Mutex
				var took []time.Duration
				concurrently(b, 1, func() error {
					start := time.Now()
					_, err := sd.session.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
					mu.Lock()
					took = append(took, time.Since(start))
					mu.Unlock()
					return err
				})
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "p50-ms")
			})
		}
	}
}

// BenchmarkListChangedCrossProcess publishes a workflow through another process sharing
// the SQLite file (its own catalog, engine and MCP server) and times, from the publish's
// answer, the notifications/tools/list_changed a session of this process gets: p50-ms.
func BenchmarkListChangedCrossProcess(b *testing.B) {
	f := newFixture(b)
	other := f.twin()
	_, ev := f.connect("")
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		select {
		case <-ev.changed:
		default:
		}
		publish(b, other.catalog, echoDef(fmt.Sprintf("lc-%d", i)))
		start := time.Now()
		select {
		case <-ev.changed:
			took = append(took, time.Since(start))
		case <-time.After(30 * time.Second):
			b.Fatal("no list_changed")
		}
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "p50-ms")
}
