package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// MCPSessionIdle is how long the session an mcp step opened to a server stays open with no
// step using it; the next step after that opens a new one.
const MCPSessionIdle = time.Minute

// MCPToolsTTL is how long a server's tool list (which says whether a tool takes an
// idempotencyKey) is kept at most: for that long when the list carries no ttlMs (servers
// before MCP 2026-07-28 send none; they announce changes with list_changed), for its ttlMs
// when shorter. A tool the list lacks is looked for again at once.
const MCPToolsTTL = 5 * time.Minute

// MCPMaxToolPages is the most pages of a server's tool list a step reads looking for its
// tool: a server that pages without end (or past this) answers no such tool.
const MCPMaxToolPages = 20

// mcpSessions are the sessions of this engine's mcp steps, one per server URL and
// connection, shared by the steps of every run and closed when idle.
type mcpSessions struct {
	mu   sync.Mutex
	open map[string]*mcpSession
	idle time.Duration
	log  *slog.Logger // what the sessions' transports log (the engine's logger)
}

func newMCPSessions(log *slog.Logger) *mcpSessions {
	return &mcpSessions{open: map[string]*mcpSession{}, idle: MCPSessionIdle, log: log}
}

// mcpSession is one initialised client session and the tool list it read.
type mcpSession struct {
	key    string
	client *client.Client
	uses   int         // steps using it now; under mcpSessions.mu
	timer  *time.Timer // closes it once idle; under mcpSessions.mu

	toolsMu    sync.Mutex
	tools      map[string]mcp.Tool
	toolsUntil time.Time // the list is fresh before it
	toolsGen   uint64    // the count of changed when the list was read

	// changed counts the server's notifications/tools/list_changed; a list read under
	// an older count is stale. Atomic, so that the notification handler never waits on
	// toolsMu (held across tools/list, whose answer the same transport delivers).
	changed atomic.Uint64
}

// session is the open session to u with the connection's credentials, or a new one.
func (p *mcpSessions) session(ctx context.Context, hc *http.Client, u *url.URL, connection string, cred *Credential) (*mcpSession, error) {
	key := connection + " " + u.String()
	p.mu.Lock()
	if s := p.open[key]; s != nil {
		s.uses++
		p.mu.Unlock()
		return s, nil
	}
	p.mu.Unlock()
	c, err := dialMCP(ctx, hc, u, cred, p.log)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.open[key]; s != nil { // another step opened one meanwhile
		_ = c.Close()
		s.uses++
		return s, nil
	}
	s := &mcpSession{key: key, client: c, uses: 1}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationToolsListChanged {
			s.changed.Add(1)
		}
	})
	p.open[key] = s
	return s, nil
}

// release ends a step's use of s; the last use starts its idle timer.
func (p *mcpSessions) release(s *mcpSession) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.uses--; s.uses > 0 || p.open[s.key] != s {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timer = time.AfterFunc(p.idle, func() { p.closeIdle(s) })
}

// closeIdle closes s if no step took it since its timer started.
func (p *mcpSessions) closeIdle(s *mcpSession) {
	p.mu.Lock()
	if s.uses > 0 || p.open[s.key] != s {
		p.mu.Unlock()
		return
	}
	delete(p.open, s.key)
	p.mu.Unlock()
	_ = s.client.Close()
}

// dropIfBroken forgets s after a transport failure (the server restarted, the session
// expired): the retry opens a new one; the steps using s now keep it until they release it.
func (p *mcpSessions) dropIfBroken(s *mcpSession, err error) {
	if _, ok := err.(*transport.Error); !ok {
		return
	}
	p.mu.Lock()
	if p.open[s.key] == s {
		delete(p.open, s.key)
	}
	p.mu.Unlock()
}

// closeAll closes every session (the engine stops).
func (p *mcpSessions) closeAll() {
	p.mu.Lock()
	open := p.open
	p.open = map[string]*mcpSession{}
	p.mu.Unlock()
	for _, s := range open {
		_ = s.client.Close()
	}
}

// tool is the tool called name, from the list while it is fresh (toolsFor) and the server
// announced no change since its reading, or from the list read again.
func (s *mcpSession) tool(ctx context.Context, name string, now time.Time) (mcp.Tool, error) {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	if t, ok := s.tools[name]; ok && now.Before(s.toolsUntil) && s.toolsGen == s.changed.Load() {
		return t, nil
	}
	gen := s.changed.Load() // before the reading: a change announced during it makes it stale
	s.tools, s.toolsGen = map[string]mcp.Tool{}, gen
	var cursor mcp.Cursor
	for page := 0; page < MCPMaxToolPages; page++ {
		list, err := s.client.ListToolsByPage(ctx, mcp.ListToolsRequest{PaginatedRequest: mcp.PaginatedRequest{
			Params: mcp.PaginatedParams{Cursor: cursor}}})
		if err != nil {
			return mcp.Tool{}, err
		}
		if page == 0 {
			s.toolsUntil = now.Add(toolsFor(list))
		}
		for _, t := range list.Tools {
			s.tools[t.Name] = t
		}
		if t, ok := s.tools[name]; ok {
			return t, nil // the pages not read yet are read when a tool on them is asked
		}
		if cursor = list.NextCursor; cursor == "" {
			break
		}
	}
	return mcp.Tool{}, fmt.Errorf("%q: %w", name, errNoSuchTool)
}

// toolsFor is how long a tool list stays fresh: its ttlMs (0: read it again at the next
// step), MCPToolsTTL when it has none or a longer one.
func toolsFor(list *mcp.ListToolsResult) time.Duration {
	if list.TTLMs == nil {
		return MCPToolsTTL
	}
	return min(time.Duration(max(*list.TTLMs, 0))*time.Millisecond, MCPToolsTTL)
}

// dialMCP opens and initialises a session over hc (the http steps' client: the egress
// policy checks every address at dial time), sending the connection's headers. Redirects
// are not followed, so the headers go to the URL's host only; response bodies are bounded
// by MaxResponseBody.
func dialMCP(ctx context.Context, hc *http.Client, u *url.URL, cred *Credential, log *slog.Logger) (*client.Client, error) {
	bounded := &http.Client{Transport: boundedBodies{next: hc.Transport},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	headers := map[string]string{}
	if cred != nil {
		for k, vs := range cred.Header {
			if len(vs) > 0 {
				headers[k] = vs[0]
			}
		}
	}
	// continuous listening: the GET stream carries notifications/tools/list_changed
	c, err := client.NewStreamableHttpClient(u.String(), transport.WithHTTPBasicClient(bounded), transport.WithHTTPHeaders(headers),
		transport.WithHTTPLogger(log), transport.WithContinuousListening())
	if err != nil {
		return nil, err
	}
	// the stream outlives the step that opened the session; Close ends it
	if err := c.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, transport.NewError(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "gorunner", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// boundedBodies fails the read of a response body past MaxResponseBody bytes with
// errBodyTooLarge, so that a server cannot make a step read without end.
type boundedBodies struct{ next http.RoundTripper }

func (b boundedBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: MaxResponseBody}
	return resp, nil
}

// errBodyTooLarge is a response body over MaxResponseBody.
var errBodyTooLarge = fmt.Errorf("response body over %d bytes", MaxResponseBody)

type boundedBody struct {
	io.ReadCloser
	left int
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errBodyTooLarge
	}
	if len(p) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= n; b.left < 0 {
		return n, errBodyTooLarge
	}
	return n, err
}
