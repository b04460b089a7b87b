package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/syncbuf"
)

// redisStore returns a --store URL on the Redis of GORUNNER_TEST_REDIS with a fresh key
// prefix, whose keys are deleted (SCAN and DEL, never FLUSHDB) when the test ends. Without
// the variable the test skips, unless GORUNNER_TEST_REDIS_REQUIRED=1.
func redisStore(t *testing.T) string {
	t.Helper()
	base := requireRedis(t)
	b := make([]byte, 8)
	_, err := rand.Read(b)
	require.NoError(t, err)
	prefix := "gorunner-test:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() { deleteKeys(t, base, prefix) })
	return base + "?prefix=" + prefix
}

// requireRedis returns GORUNNER_TEST_REDIS; without it the test skips, unless
// GORUNNER_TEST_REDIS_REQUIRED=1 makes that a failure.
func requireRedis(t *testing.T) string {
	t.Helper()
	url := os.Getenv("GORUNNER_TEST_REDIS")
	if url == "" {
		skipUnlessRequired(t, "GORUNNER_TEST_REDIS is not set")
	}
	return url
}

// skipUnlessRequired skips the test for want of a Redis prerequisite, or fails it when
// GORUNNER_TEST_REDIS_REQUIRED=1 says the Redis tests must run.
func skipUnlessRequired(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("GORUNNER_TEST_REDIS_REQUIRED") == "1" {
		t.Fatal(why + ", but GORUNNER_TEST_REDIS_REQUIRED=1")
	}
	t.Skip(why)
}

func deleteKeys(t *testing.T, url, prefix string) {
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		require.NoError(t, rdb.Del(ctx, iter.Val()).Err())
	}
	require.NoError(t, iter.Err())
}

// startOnStore starts n `gorunner serve` processes on one data directory (for the admin
// token and the secret key) and one store, the first alone so it makes the admin token.
func startOnStore(t *testing.T, n int, store string, logs *syncbuf.Buffer, args ...string) []*server {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server logs:\n%s", logs.String())
		}
	})
	args = append([]string{"--store", store}, args...)
	servers := make([]*server, n)
	for i := range servers {
		servers[i] = startServeLogging(t, dir, logs, args...)
	}
	return servers
}

// publish creates and publishes a workflow through s.
func publish(t *testing.T, s *server, token, def string) {
	t.Helper()
	var w struct {
		Name string `json:"name"`
	}
	require.NoError(t, json.Unmarshal([]byte(def), &w))
	status, body := call(t, token, "POST", s.url+"/api/workflows", def)
	require.Equal(t, 201, status, body)
	status, body = call(t, token, "POST", s.url+"/api/workflows/"+w.Name+"/publish", "")
	require.Equal(t, 201, status, body)
}

// submit posts a run request and returns its status and run ID; it never fails the test,
// so many goroutines may call it.
func submit(s *server, token, workflow, key, body string) (int, string, error) {
	req, err := http.NewRequest("POST", s.url+"/api/workflows/"+workflow+"/run", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out.Data.ID, nil
}

const onceDef = `{"name": "once", "input": {"type": "object"}, "steps": [{"id": "s", "set": "${{ input }}"}]}`

// TestRedisThreeProcesses is threeProcesses on one Redis.
func TestRedisThreeProcesses(t *testing.T) {
	t.Parallel()
	threeProcesses(t, redisStore(t))
}

// threeProcesses runs three real `gorunner serve` processes on one store: one
// Idempotency-Key sent 500 times at once over the three starts one run; an MCP session on
// one process hears list_changed within 1 s of a publish on another; and when the process
// working a run is SIGKILLed, another completes it without running a completed step again.
func threeProcesses(t *testing.T, store string) {
	counter := newKeyCounter()
	callers := make(chan string, 100)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		callers <- r.RemoteAddr
		counter.ServeHTTP(w, r)
	}))
	defer target.Close()
	defer close(counter.release)

	servers := startOnStore(t, 3, store, &syncbuf.Buffer{}, "--lease-ttl", "2s", "--http-allow", "127.0.0.1")
	token := servers[0].adminToken(t)
	publish(t, servers[0], token, onceDef)

	t.Run("OneKeyOneRun", func(t *testing.T) { oneKeyOneRun(t, servers, token) })
	t.Run("ListChangedAcrossProcesses", func(t *testing.T) { listChangedAcross(t, servers, token) })
	t.Run("KilledMidRun", func(t *testing.T) { killedMidRun(t, servers, token, target.URL, counter, callers) })
}

func oneKeyOneRun(t *testing.T, servers []*server, token string) {
	const n = 500
	statuses := make([]int, n)
	ids := make([]string, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			statuses[i], ids[i], errs[i] = submit(servers[i%3], token, "once", "one-key", `{"n": 1}`)
		})
	}
	close(start)
	wg.Wait()
	runIDs := map[string]bool{}
	for i := range n {
		require.NoError(t, errs[i])
		require.Contains(t, []int{202, 409}, statuses[i], "a replay or still in progress")
		if statuses[i] == 202 {
			runIDs[ids[i]] = true
		}
	}
	require.Len(t, runIDs, 1, "every answer names the one run")
	status, body := call(t, token, "GET", servers[1].url+"/api/runs?workflow=once", "")
	require.Equal(t, 200, status)
	require.Len(t, body["data"], 1, "exactly one run was started")
}

// bearer adds a token to every request of an MCP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func listChangedAcross(t *testing.T, servers []*server, token string) {
	changed := make(chan struct{}, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	session, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: servers[1].url + "/mcp", HTTPClient: &http.Client{Transport: bearer{token: token}}, MaxRetries: -1,
	}, nil)
	require.NoError(t, err)
	defer session.Close()
	tools, err := session.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.NotEmpty(t, tools.Tools, "the session is live")

	publish(t, servers[2], token, `{"name": "fresh", "input": {"type": "object"}, "steps": [{"id": "s", "set": 1}]}`)
	published := time.Now()
	select {
	case <-changed:
		require.Less(t, time.Since(published), time.Second, "list_changed within 1 s")
	case <-time.After(5 * time.Second):
		t.Fatal("no list_changed after a publish on another process")
	}
}

func killedMidRun(t *testing.T, servers []*server, token, targetURL string, counter *keyCounter, callers chan string) {
	publish(t, servers[0], token, `{"name": "charge", "input": {"type": "object"}, "steps": [
	  {"id": "first", "set": {"at": "start"}},
	  {"id": "charge", "http": {"method": "POST", "url": "`+targetURL+`", "body": {"n": 1}}, "retry": {"maxAttempts": 5, "initialInterval": "100ms"}},
	  {"id": "done", "set": "${{ steps.charge.output.body }}"}
	]}`)
	counter.setHold(true)
	status, runID, err := submit(servers[0], token, "charge", "", `{}`)
	require.NoError(t, err)
	require.Equal(t, 202, status)
	var caller string
	select {
	case caller = <-callers:
	case <-time.After(60 * time.Second):
		t.Fatal("the http step never called")
	}
	firstKey := <-counter.arrived
	victim := ownerOf(t, caller, servers)
	require.NoError(t, victim.cmd.Process.Kill(), "SIGKILL the process working the run")
	_ = victim.cmd.Wait()
	counter.setHold(false)

	survivor := servers[0]
	if survivor == victim {
		survivor = servers[1]
	}
	status, body := call(t, token, "GET", survivor.url+"/api/runs/"+runID+"?wait=60s", "")
	require.Equal(t, 200, status)
	run := body["data"].(map[string]any)
	require.Equal(t, "completed", run["status"], run)
	require.Equal(t, map[string]any{"charged": true}, run["output"])
	steps := stepsByID(run)
	require.EqualValues(t, 1, steps["first"]["attempts"], "the completed step ran once")
	require.Equal(t, firstKey, steps["charge"]["stepId"])
	require.Equal(t, map[string]int{firstKey: 2}, counter.snapshot(), "only the interrupted step ran again, with its key")
}

// ownerOf finds which server's process holds the client end of a TCP connection whose
// address is remote, through /proc: the socket's inode, then the process with it open.
func ownerOf(t *testing.T, remote string, servers []*server) *server {
	t.Helper()
	_, port, err := net.SplitHostPort(remote)
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	inode := socketInode(t, p)
	for _, s := range servers {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, _ := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid), fd.Name()))
			if link == "socket:["+inode+"]" {
				return s
			}
		}
	}
	t.Fatalf("no server holds the socket on port %d", p)
	return nil
}

// socketInode is the inode of the live local TCP socket bound to port.
func socketInode(t *testing.T, port int) string {
	t.Helper()
	want := fmt.Sprintf(":%04X", port)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		raw, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n")[1:] {
			f := strings.Fields(line)
			// A closed connection that used the port before (TIME_WAIT) stays listed with
			// inode 0 and no owner: only a live socket names its holder.
			if len(f) > 9 && strings.HasSuffix(f[1], want) && f[9] != "0" {
				return f[9]
			}
		}
	}
	t.Fatalf("no socket on local port %d", port)
	return ""
}

// ownRedis is a redis-server this test starts, stops and starts again on one port and one
// append-only file, so an outage loses nothing; the shared Redis is never touched.
type ownRedis struct {
	port int
	dir  string
	cmd  *exec.Cmd
}

func newOwnRedis(t *testing.T) *ownRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		skipUnlessRequired(t, "redis-server is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &ownRedis{port: ln.Addr().(*net.TCPAddr).Port, dir: t.TempDir()}
	require.NoError(t, ln.Close())
	r.start(t)
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *ownRedis) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

func (r *ownRedis) start(t *testing.T) {
	t.Helper()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--dir", r.dir)
	require.NoError(t, r.cmd.Start())
	opts, err := redis.ParseURL(r.url())
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	require.Eventually(t, func() bool { return rdb.Ping(context.Background()).Err() == nil },
		10*time.Second, 20*time.Millisecond, "redis-server answers")
}

func (r *ownRedis) stop(t *testing.T) {
	t.Helper()
	if r.cmd == nil || r.cmd.ProcessState != nil {
		return
	}
	require.NoError(t, r.cmd.Process.Signal(os.Interrupt))
	_ = r.cmd.Wait()
}

// traffic sends keyed run requests over the servers until stopped, and counts answers.
type traffic struct {
	ok, unavailable, failed, broken atomic.Int64 // 2xx (passed through), 503, other statuses, no answer at all
	stop                            chan struct{}
	done                            chan struct{}
}

func startTraffic(servers []*server, token string) *traffic {
	tr := &traffic{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(tr.done)
		for i := 0; ; i++ {
			select {
			case <-tr.stop:
				return
			default:
			}
			status, _, err := submit(servers[i%len(servers)], token, "once", fmt.Sprint("traffic-", i), `{"n": 2}`)
			switch {
			case err != nil:
				tr.broken.Add(1)
			case status/100 == 2:
				tr.ok.Add(1)
			case status == 503:
				tr.unavailable.Add(1)
			default:
				tr.failed.Add(1)
			}
		}
	}()
	return tr
}

func (tr *traffic) end() {
	close(tr.stop)
	<-tr.done
}

// TestRedisOutage is storeOutage on a redis-server of the test's own.
func TestRedisOutage(t *testing.T) {
	t.Parallel()
	requireRedis(t)
	storeOutage(t, newOwnRedis(t))
}

// outage is a store a test can take away and bring back, losing nothing.
type outage interface {
	url() string
	stop(t *testing.T)
	start(t *testing.T)
}

// storeOutage stops the store under traffic and starts it again: no process crashes or
// stops answering, every run accepted before the outage completes, and keys are enforced
// again once the store is back. During the outage /readyz fails, a known token still
// authenticates (from the process's last-known-good memory), the key claim fails and the
// call goes through without its key, logged; the run cannot be admitted either, since runs
// live in the same store, so the answer is 503 UNAVAILABLE with Retry-After.
func storeOutage(t *testing.T, rs outage) {
	logs := &syncbuf.Buffer{}
	servers := startOnStore(t, 3, rs.url(), logs, "--lease-ttl", "2s")
	token := servers[0].adminToken(t)
	publish(t, servers[0], token, onceDef)
	publish(t, servers[0], token, `{"name": "nap", "input": {"type": "object"}, "steps": [
	  {"id": "nap", "sleep": {"duration": "2s"}}, {"id": "done", "set": "${{ input }}"}]}`)
	var accepted []string
	for i := range 9 {
		status, id, err := submit(servers[i%3], token, "nap", fmt.Sprint("nap-", i), fmt.Sprintf(`{"n": %d}`, i))
		require.NoError(t, err)
		require.Equal(t, 202, status)
		accepted = append(accepted, id)
	}

	tr := startTraffic(servers, token)
	rs.stop(t)
	downBefore := tr.unavailable.Load()
	require.Eventually(t, func() bool { return tr.unavailable.Load() >= downBefore+10 }, 30*time.Second, 10*time.Millisecond,
		"requests are answered 503 while the store is down")
	status, _ := call(t, token, "GET", servers[1].url+"/readyz", "")
	require.Equal(t, 503, status, "not ready while the store is down")
	require.Eventually(t, func() bool { return logs.Count("goes through without its key") > 0 }, 30*time.Second, 10*time.Millisecond,
		"a call whose key cannot be claimed goes through without it, logged")
	rs.start(t)
	okAfter := tr.ok.Load()
	require.Eventually(t, func() bool { return tr.ok.Load() >= okAfter+10 }, 30*time.Second, 10*time.Millisecond,
		"requests succeed again once the store is back")
	tr.end()
	require.Zero(t, tr.broken.Load(), "every request got an answer: no process crashed")
	require.Zero(t, tr.failed.Load(), "an outage answers 503 UNAVAILABLE or lets a call through, nothing else")
	t.Logf("traffic: %d ok, %d unavailable, %d other failures; %d calls went through without their key",
		tr.ok.Load(), tr.unavailable.Load(), tr.failed.Load(), logs.Count("goes through without its key"))

	for _, s := range servers {
		require.Nil(t, s.cmd.ProcessState, "the process is still running")
		status, _ := call(t, token, "GET", s.url+"/readyz", "")
		require.Equal(t, 200, status)
	}
	first, firstID, err := submit(servers[0], token, "once", "after-outage", `{"n": 3}`)
	require.NoError(t, err)
	again, againID, err := submit(servers[1], token, "once", "after-outage", `{"n": 3}`)
	require.NoError(t, err)
	require.Equal(t, []int{202, 202}, []int{first, again})
	require.Equal(t, firstID, againID, "the key is enforced again: the retry replays")
	for _, id := range accepted {
		// ?wait= answers once a run settles, and a run still asleep is settled (waiting).
		require.Eventually(t, func() bool {
			status, body := call(t, token, "GET", servers[2].url+"/api/runs/"+id+"?wait=10s", "")
			return status == 200 && body["data"].(map[string]any)["status"] == "completed"
		}, 60*time.Second, 10*time.Millisecond, "a run accepted before the outage completes")
	}
}
