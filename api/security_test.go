package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
)

// TestHostHeaderNeverReflected sends Host: evil.example to every call that writes an
// absolute URL; the answers name only the public URL.
func TestHostHeaderNeverReflected(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wf := e.create("w-host")
	id := wf["id"].(string)
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/workflows/" + id},
		{"GET", "/api/workflows"},
		{"POST", "/api/workflows/" + id + "/webhook/rotate"},
		{"POST", "/api/workflows/" + id + "/duplicate"},
		{"GET", "/api/nope"},
	} {
		a := e.do(c.method, c.path, nil, "Host", "evil.example")
		require.Less(t, a.Status, 500, string(a.Raw))
		require.NotContains(t, string(a.Raw), "evil.example", c.path)
		for k, v := range a.Header {
			require.NotContains(t, strings.Join(v, " "), "evil.example", k)
		}
	}
	a := e.do("GET", "/api/workflows/"+id, nil, "Host", "evil.example")
	require.True(t, strings.HasPrefix(a.data()["webhookUrl"].(string), e.srv.URL+"/webhooks/"), a.data()["webhookUrl"])
}

// TestInvalidUTF8Refused sends bodies with a byte that is not UTF-8 inside a JSON string:
// each is refused with 400 and nothing is stored, also under an idempotency key.
func TestInvalidUTF8Refused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wf := e.create("w-utf8")
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/workflows/"+wf["id"].(string)+"/publish", nil).Status)
	hook := e.do("GET", "/api/workflows/w-utf8", nil).data()["webhookUrl"].(string)
	bad := "{\"name\": \"Ada\xff\xfe\"}"
	for _, c := range []struct{ method, path string }{
		{"POST", "/api/workflows/w-utf8/run"},
		{"POST", "/api/workflows"},
		{"PUT", "/api/workflows/w-utf8"},
		{"POST", "/api/hooks/tok/resume"},
		{"POST", "/api/connections"},
		{"POST", strings.TrimPrefix(hook, e.srv.URL)},
	} {
		a := e.do(c.method, c.path, bad, "Idempotency-Key", "k-"+c.path)
		require.Equal(t, http.StatusBadRequest, a.Status, "%s %s: %s", c.method, c.path, a.Raw)
		require.Equal(t, "VALIDATION_ERROR", a.errorCode())
		require.Contains(t, string(a.Raw), "UTF-8")
	}
	runs := e.do("GET", "/api/runs", nil)
	require.Equal(t, http.StatusOK, runs.Status)
	require.Empty(t, runs.Body["data"])
	require.Equal(t, float64(1), e.do("GET", "/api/workflows/w-utf8", nil).data()["rev"], "the draft is unchanged")
	// The key was not taken: the same key with a valid body starts the run.
	a := e.do("POST", "/api/workflows/w-utf8/run", `{"name": "Ada"}`, "Idempotency-Key", "k-/api/workflows/w-utf8/run")
	require.Equal(t, http.StatusAccepted, a.Status, string(a.Raw))
}

// TestSlowBodyIsCutOff trickles a body one byte per second into a server whose read
// timeout is 300ms: the request is ended long before the body would be complete, and
// nothing is created.
func TestSlowBodyIsCutOff(t *testing.T) {
	t.Parallel()
	e := newEnvConfig(t, envConfig{limits: &api.HTTPLimits{ReadTimeout: 300 * time.Millisecond}})
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	body := `{"name": "slow", "steps": [{"id": "a", "set": {"x": 1}}]}`
	_, err = fmt.Fprintf(conn, "POST /api/workflows HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", e.token, len(body))
	require.NoError(t, err)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := range len(body) {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte{body[i]}); err != nil {
				return
			}
		}
	}()
	start := time.Now()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		res.Body.Close()
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
	}
	require.Less(t, time.Since(start), 10*time.Second, "the slow body was not cut off")
	require.Equal(t, http.StatusNotFound, e.do("GET", "/api/workflows/slow", nil).Status)
}

// TestIdleConnectionsAreClosed: a keep-alive connection left idle after a request, and a
// connection that never sends a request, are both closed by the server.
func TestIdleConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	e := newEnvConfig(t, envConfig{limits: &api.HTTPLimits{IdleTimeout: 200 * time.Millisecond, ReadHeaderTimeout: 200 * time.Millisecond}})
	closedWithin := func(conn net.Conn, rd *bufio.Reader) time.Duration {
		start := time.Now()
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err := rd.ReadByte()
		require.ErrorIs(t, err, io.EOF, "the server should close the connection")
		return time.Since(start)
	}

	idle, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	require.NoError(t, err)
	defer idle.Close()
	_, err = io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	rd := bufio.NewReader(idle)
	res, err := http.ReadResponse(rd, nil)
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Less(t, closedWithin(idle, rd), 5*time.Second)

	silent, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	require.NoError(t, err)
	defer silent.Close()
	require.Less(t, closedWithin(silent, bufio.NewReader(silent)), 5*time.Second)
}

// blocking is a custom step kind that holds its run running until release is closed.
type blocking struct{ release chan struct{} }

func (b blocking) Run(ctx context.Context, _ *runner.StepContext) (any, error) {
	select {
	case <-b.release:
		return map[string]any{"done": true}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// countingStore counts the engine's reads of runs.
type countingStore struct {
	runner.Store
	gets atomic.Int64
}

func (c *countingStore) GetRun(ctx context.Context, id string) (*runner.Run, error) {
	c.gets.Add(1)
	return c.Store.GetRun(ctx, id)
}

// blockedEnv starts a run held running by a blocking step; release lets it finish.
func blockedEnv(t *testing.T, cfg envConfig) (e *env, runID string, release func()) {
	t.Helper()
	unblock := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(unblock) }) }
	cfg.kinds = map[string]runner.StepHandler{"block": blocking{unblock}}
	cfg.runner.PollInterval = time.Hour // reads come from change signals only
	e = newEnvConfig(t, cfg)
	t.Cleanup(release) // before the engine stops, which waits for its steps
	def := `{"name": "held", "input": {"type": "object"}, "steps": [{"id": "hold", "block": {}}]}`
	created := e.do("POST", "/api/workflows", def)
	require.Equal(t, http.StatusCreated, created.Status, string(created.Raw))
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/workflows/held/publish", nil).Status)
	a := e.do("POST", "/api/workflows/held/run", `{}`)
	require.Equal(t, http.StatusAccepted, a.Status, string(a.Raw))
	return e, a.data()["id"].(string), release
}

// startWaiters opens n ?wait= long polls on run id as token; the returned func waits for
// their answers and returns their statuses. A waiter refused because waitsFull's probe held
// the last slot at that instant asks again, so that all n end up waiting.
func startWaiters(e *env, token, id string, n int) func() []int {
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for {
				statuses[i] = e.doAs(token, "GET", "/api/runs/"+id+"?wait=60s", nil).Status
				if statuses[i] != http.StatusTooManyRequests {
					return
				}
				<-time.After(10 * time.Millisecond)
			}
		})
	}
	return func() []int { wg.Wait(); return statuses }
}

// waitsFull polls with a 1ms wait until the principal's waits are all taken.
func waitsFull(t *testing.T, e *env, token, id string) answer {
	t.Helper()
	var last answer
	require.Eventually(t, func() bool {
		last = e.doAs(token, "GET", "/api/runs/"+id+"?wait=1ms", nil)
		return last.Status == http.StatusTooManyRequests
	}, 20*time.Second, 20*time.Millisecond, "the waits never filled up: last %d %s", &last.Status, &last.Raw)
	return last
}

// TestWaitsPerPrincipalAreLimited holds MaxWaitsPerPrincipal long polls open: one more is
// 429 RATE_LIMITED with Retry-After, while another principal and a plain GET still answer.
func TestWaitsPerPrincipalAreLimited(t *testing.T) {
	t.Parallel()
	e, id, release := blockedEnv(t, envConfig{})
	answers := startWaiters(e, e.token, id, runner.MaxWaitsPerPrincipal)
	over := waitsFull(t, e, e.token, id)
	require.Equal(t, "RATE_LIMITED", over.errorCode())
	require.Equal(t, "1", over.Header.Get("Retry-After"))
	require.Equal(t, http.StatusOK, e.do("GET", "/api/runs/"+id, nil).Status, "a GET without wait holds no wait")
	_, other, err := e.auth.Issue(context.Background(), auth.IssueParams{Name: "other", Scopes: auth.AdminScopes()})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, e.doAs(other, "GET", "/api/runs/"+id+"?wait=1ms", nil).Status)
	release()
	for _, st := range answers() {
		require.Equal(t, http.StatusOK, st)
	}
	final := e.do("GET", "/api/runs/"+id+"?wait=10s", nil)
	require.Equal(t, "completed", final.data()["status"], "the wait is free again once the others answered")
}

// TestWaitersShareReads: many waiters on one run cost O(1) store reads per change, not one
// per waiter per poll.
func TestWaitersShareReads(t *testing.T) {
	t.Parallel()
	counting := &countingStore{}
	e, id, release := blockedEnv(t, envConfig{runs: func(st runner.Store) runner.Store { counting.Store = st; return counting }})
	const n = runner.MaxWaitsPerPrincipal
	answers := startWaiters(e, e.token, id, n)
	waitsFull(t, e, e.token, id)
	before := counting.gets.Load()
	release()
	for _, st := range answers() {
		require.Equal(t, http.StatusOK, st)
	}
	reads := counting.gets.Load() - before
	require.LessOrEqual(t, reads, int64(8), "%d waiters made %d reads of the run", n, reads)
}

// TestWaitingAnswersOutliveDeadlines: a ?wait= long poll outlasts the read and write
// timeouts (it lifts them once its request is read) and answers with the finished run.
func TestWaitingAnswersOutliveDeadlines(t *testing.T) {
	t.Parallel()
	limits := &api.HTTPLimits{ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second} // room for the setup calls on a busy machine
	e, id, release := blockedEnv(t, envConfig{limits: limits})
	answer := make(chan answer, 1)
	go func() { answer <- e.do("GET", "/api/runs/"+id+"?wait=30s", nil) }()
	select {
	case a := <-answer:
		t.Fatalf("the wait answered before the run finished: %d %s", a.Status, a.Raw)
	case <-time.After(5 * time.Second): // well past both timeouts
	}
	release()
	a := <-answer
	require.Equal(t, http.StatusOK, a.Status, string(a.Raw))
	require.Equal(t, "completed", a.data()["status"])
}

// TestHeadersPastMaxHeaderBytes are refused with 431.
func TestHeadersPastMaxHeaderBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.do("GET", "/healthz", nil, "X-Big", strings.Repeat("h", api.MaxHeaderBytes+8<<10))
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, a.Status)
	require.Equal(t, http.StatusOK, e.do("GET", "/healthz", nil, "X-Big", strings.Repeat("h", api.MaxHeaderBytes/2)).Status)
}

// TestListPagesAreBounded lists runs whose inputs are ~900 KB and outputs 1 MB: outputs are
// truncation markers, pages stay under MaxPageBytes and continue at nextCursor, and the
// run itself keeps its whole output.
func TestListPagesAreBounded(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("o", 1<<20)
	kinds := map[string]runner.StepHandler{"big": runner.StepHandlerFunc(func(context.Context, *runner.StepContext) (any, error) {
		return map[string]any{"blob": big}, nil
	})}
	e := newEnvConfig(t, envConfig{kinds: kinds})
	def := `{"name": "bulky", "input": {"type": "object"}, "steps": [{"id": "make", "big": {}}]}`
	created := e.do("POST", "/api/workflows", def)
	require.Equal(t, http.StatusCreated, created.Status, string(created.Raw))
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/workflows/bulky/publish", nil).Status)
	const runs = 5
	input, err := json.Marshal(map[string]string{"pad": strings.Repeat("i", 900<<10)})
	require.NoError(t, err)
	var ids []string
	for range runs {
		a := e.do("POST", "/api/workflows/bulky/run", input)
		require.Equal(t, http.StatusAccepted, a.Status, string(a.Raw))
		ids = append(ids, a.data()["id"].(string))
	}
	for _, id := range ids {
		require.Equal(t, "completed", e.do("GET", "/api/runs/"+id+"?wait=30s", nil).data()["status"])
	}

	seen, pages, cursor := 0, 0, ""
	for {
		a := e.do("GET", "/api/runs?limit=1000&cursor="+cursor, nil)
		require.Equal(t, http.StatusOK, a.Status)
		require.Less(t, len(a.Raw), api.MaxPageBytes)
		for _, item := range a.Body["data"].([]any) {
			run := item.(map[string]any)
			for _, out := range []any{run["output"], run["steps"].([]any)[0].(map[string]any)["output"]} {
				marker := out.(map[string]any)
				require.Equal(t, true, marker["truncated"])
				require.Greater(t, marker["bytes"], float64(len(big)))
				require.Len(t, marker, 2)
			}
			seen++
		}
		pages++
		next, _ := a.Body["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, runs, seen)
	require.Greater(t, pages, 1, "5 runs of 900 KB inputs do not fit one 4 MiB page")
	whole := e.do("GET", "/api/runs/"+ids[0], nil)
	require.Equal(t, big, whole.data()["output"].(map[string]any)["blob"])
}

// TestIdempotencyKeyMustBeUTF8 sends keys that are not characters (SPEC §4: a key is 1 to
// 255 characters) but bytes HTTP lets through: "k\xff\xfe" and "k\xfe\xff". Taken, both
// were listed as the same "k\ufffd\ufffd", which no GET finds. Each is refused with 400
// and nothing is done; a key in any script is kept and found.
func TestIdempotencyKeyMustBeUTF8(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.publish(greetDef("greet"))
	for _, key := range []string{"k\xff\xfe", "k\xfe\xff", "\xc3"} {
		a := e.do("POST", "/api/workflows/greet/run", map[string]any{"name": "Ada"}, "Idempotency-Key", key)
		require.Equal(t, http.StatusBadRequest, a.Status, "%q: %s", key, a.Raw)
		require.Equal(t, "VALIDATION_ERROR", a.errorCode())
		require.Contains(t, string(a.Raw), "Idempotency-Key")
	}
	require.Empty(t, e.do("GET", "/api/runs", nil).Body["data"], "no run started")
	require.Empty(t, e.do("GET", "/api/idempotency-keys", nil).Body["data"], "no key taken")

	const key = "clé-✓-ключ"
	a := e.do("POST", "/api/workflows/greet/run", map[string]any{"name": "Ada"}, "Idempotency-Key", key)
	require.Equal(t, http.StatusAccepted, a.Status, string(a.Raw))
	got := e.do("GET", "/api/idempotency-keys/"+url.PathEscape(key), nil)
	require.Equal(t, http.StatusOK, got.Status, string(got.Raw))
	require.Equal(t, key, got.data()["key"])

	// Where the header is not read (SPEC §4: ignored on GET, PUT, DELETE), its bytes
	// change nothing.
	for _, tc := range []struct{ method, path string }{
		{"GET", "/api/runs"},
		{"GET", "/api/workflows/greet"},
		{"PUT", "/api/workflows/greet"},
	} {
		var body any
		if tc.method == "PUT" {
			body = greetDef("greet")
		}
		a := e.do(tc.method, tc.path, body, "Idempotency-Key", "k\xff")
		require.Equal(t, http.StatusOK, a.Status, "%s %s: %s", tc.method, tc.path, a.Raw)
	}
}
