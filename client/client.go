// Package client calls GoRunner's REST API as one principal: it sends the bearer token,
// the JSON body and the Idempotency-Key, decodes the {"data": …, "nextCursor": …} envelope
// of a success and turns any other answer into an *Error carrying the SPEC error code. The
// gorunner command's client commands (workflow, run, runs, hook) are built on it.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultURL is where a `gorunner serve` started with no flags listens.
const DefaultURL = "http://127.0.0.1:8080"

// DefaultTimeout bounds a whole call, answer included, when Config.HTTPClient is nil. It
// is above the longest wait the API grants (?wait= and tool-call waits), so a waiting
// call ends on the server's terms.
const DefaultTimeout = 90 * time.Second

// Config holds the optional settings of a Client; the zero value is usable.
type Config struct {
	// HTTPClient makes the calls; nil means one with DefaultTimeout.
	HTTPClient *http.Client
	// UserAgent is sent with every call; empty means "gorunner-client".
	UserAgent string
}

// Client calls the API at one base URL with one token. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	token     string
	http      *http.Client
	userAgent string
}

// New returns a Client for the server at baseURL (http or https, e.g. DefaultURL) calling
// with token; a nil cfg means defaults.
func New(baseURL, token string, cfg *Config) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: use an address such as %s", baseURL, DefaultURL)
	}
	c := &Client{base: u, token: token, http: &http.Client{Timeout: DefaultTimeout}, userAgent: "gorunner-client"}
	if cfg != nil && cfg.HTTPClient != nil {
		c.http = cfg.HTTPClient
	}
	if cfg != nil && cfg.UserAgent != "" {
		c.userAgent = cfg.UserAgent
	}
	return c, nil
}

// Request is one API call.
type Request struct {
	Method string
	// Path is the API path, e.g. /api/runs/ID; callers escape its segments.
	Path  string
	Query url.Values
	// Body is sent as application/json when not nil.
	Body []byte
	// Key is sent as the Idempotency-Key header when not empty.
	Key string
	// Accept is sent as the Accept header when not empty.
	Accept string
}

// Envelope is the success answer of the API.
type Envelope struct {
	Data       json.RawMessage `json:"data"`
	NextCursor string          `json:"nextCursor"`
}

// Send makes the call and returns the status and body of a 2xx answer. Any other answer
// is an *Error; a server that cannot be dialled is an *UnreachableError.
func (c *Client) Send(ctx context.Context, r Request) (int, []byte, error) {
	req, err := c.newRequest(ctx, r)
	if err != nil {
		return 0, nil, err
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, nil, c.transportError(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("reading the answer from %s: %w", c.base, err)
	}
	if res.StatusCode >= 300 {
		return res.StatusCode, nil, newError(res.StatusCode, body)
	}
	return res.StatusCode, body, nil
}

func (c *Client) newRequest(ctx context.Context, r Request) (*http.Request, error) {
	u := *c.base
	u.Path += r.Path
	u.RawQuery = r.Query.Encode()
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), bytes.NewReader(r.Body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("User-Agent", c.userAgent)
	if r.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.Key != "" {
		req.Header.Set("Idempotency-Key", r.Key)
	}
	if r.Accept != "" {
		req.Header.Set("Accept", r.Accept)
	}
	return req, nil
}

// Call makes the call and decodes the answer's data into out (when not nil).
func (c *Client) Call(ctx context.Context, r Request, out any) (int, Envelope, error) {
	status, body, err := c.Send(ctx, r)
	if err != nil || len(body) == 0 {
		return status, Envelope{}, err
	}
	var env Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return status, env, fmt.Errorf("the server at %s did not answer with GoRunner's JSON: %w", c.base, err)
	}
	if out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			return status, env, fmt.Errorf("decoding the answer: %w", err)
		}
	}
	return status, env, nil
}

func (c *Client) transportError(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return &UnreachableError{URL: c.base.String(), Err: err}
	}
	return fmt.Errorf("calling GoRunner at %s: %w", c.base, err)
}
