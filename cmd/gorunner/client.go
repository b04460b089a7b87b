package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// defaultURL is where client commands find the server unless GORUNNER_URL says otherwise.
const defaultURL = "http://127.0.0.1:8080"

// clientOpts are the flags every command that calls a running server takes.
type clientOpts struct {
	g      *globals
	url    string
	output string
}

// addTo gives cmd (and its subcommands) the client flags.
func (o *clientOpts) addTo(cmd *cobra.Command) *cobra.Command {
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.url, "url", defaultURL, "server address (env GORUNNER_URL); the token comes from GORUNNER_TOKEN, else <data-dir>/admin-token")
	pf.StringVarP(&o.output, "output", "o", "", "output: table or json (default: table on a terminal, json when piped)")
	return cmd
}

// client calls GoRunner's REST API as one principal.
type client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// client builds the API client from the flags, GORUNNER_TOKEN and the admin-token file.
func (o *clientOpts) client() (*client, error) {
	u, err := url.Parse(strings.TrimSuffix(o.url, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageError(fmt.Errorf("--url %q: use an address such as %s", o.url, defaultURL))
	}
	token, err := o.token()
	if err != nil {
		return nil, err
	}
	return &client{base: u, token: token, http: &http.Client{Timeout: 90 * time.Second}}, nil
}

// token is GORUNNER_TOKEN, else the admin token `gorunner serve` wrote to the data directory.
func (o *clientOpts) token() (string, error) {
	if t := strings.TrimSpace(os.Getenv("GORUNNER_TOKEN")); t != "" {
		return t, nil
	}
	path := filepath.Join(o.g.dataDir, "admin-token")
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("no API token: set GORUNNER_TOKEN, or point --data-dir at the directory where `gorunner serve` wrote admin-token (looked in %s)", path)
	}
	if err != nil {
		return "", fmt.Errorf("reading the admin token: %w; set GORUNNER_TOKEN instead", err)
	}
	return strings.TrimSpace(string(raw)), nil
}

// request is one API call.
type request struct {
	method string
	path   string
	query  url.Values
	body   []byte
	key    string // Idempotency-Key
	accept string
}

// envelope is the success answer of the API.
type envelope struct {
	Data       json.RawMessage `json:"data"`
	NextCursor string          `json:"nextCursor"`
}

// send makes the call and returns the status and body of a 2xx answer; any other answer
// is an *apiError.
func (c *client) send(ctx context.Context, r request) (int, []byte, error) {
	u := *c.base
	u.Path += r.path
	u.RawQuery = r.query.Encode()
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), bytes.NewReader(r.body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("User-Agent", "gorunner-cli/"+version())
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.key != "" {
		req.Header.Set("Idempotency-Key", r.key)
	}
	if r.accept != "" {
		req.Header.Set("Accept", r.accept)
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
		return res.StatusCode, nil, newAPIError(res.StatusCode, body)
	}
	return res.StatusCode, body, nil
}

// call makes the call and decodes the answer's data into out (when not nil).
func (c *client) call(ctx context.Context, r request, out any) (int, envelope, error) {
	status, body, err := c.send(ctx, r)
	if err != nil || len(body) == 0 {
		return status, envelope{}, err
	}
	var env envelope
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

// transportError says what to do when the server cannot be reached.
func (c *client) transportError(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return fmt.Errorf("cannot reach GoRunner at %s: start it with `gorunner serve`, or set GORUNNER_URL to its address", c.base)
	}
	return fmt.Errorf("calling GoRunner at %s: %w", c.base, err)
}

// apiError is an error answer of the API.
type apiError struct {
	Status  int
	Code    string
	Message string
	Details []struct {
		Path    string `json:"path"`
		Message string `json:"message"`
	}
}

func newAPIError(status int, body []byte) *apiError {
	var env struct {
		Error apiError `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error.Code == "" {
		return &apiError{Status: status, Code: http.StatusText(status), Message: strings.TrimSpace(string(body))}
	}
	env.Error.Status = status
	return &env.Error
}

func (e *apiError) Error() string {
	if e.Status == http.StatusUnauthorized {
		return "the server refused the token (revoked or wrong): set GORUNNER_TOKEN to a valid token; `gorunner token create NAME` makes one"
	}
	msg := e.Code + ": " + e.Message
	var details []string
	for _, d := range e.Details {
		if d.Path != "" && !strings.Contains(e.Message, d.Message) {
			details = append(details, d.Path+": "+d.Message)
		}
	}
	if len(details) > 0 {
		msg += " (" + strings.Join(details, "; ") + ")"
	}
	return msg
}

// notFound reports whether err is the API's 404.
func notFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// usageError marks err as a mistake on the command line: exit code 2.
func usageError(err error) error { return &exitError{code: 2, err: err} }

// jsonArg reads a JSON flag value: inline JSON, or @FILE for a file's contents (@- for
// stdin). A bad value is a usage error.
func jsonArg(cmd *cobra.Command, flag, value string) ([]byte, error) {
	raw := []byte(value)
	if name, ok := strings.CutPrefix(value, "@"); ok {
		var err error
		if name == "-" {
			raw, err = io.ReadAll(cmd.InOrStdin())
		} else {
			raw, err = os.ReadFile(name)
		}
		if err != nil {
			return nil, usageError(fmt.Errorf("--%s: cannot read %s: %w", flag, name, unwrapPathError(err)))
		}
	}
	raw = bytes.TrimSpace(raw)
	if !json.Valid(raw) {
		var v any
		err := json.Unmarshal(raw, &v)
		return nil, usageError(fmt.Errorf("--%s is not valid JSON (%v); quote it for the shell, e.g. --%s '{\"name\": \"Ada\"}', or use @FILE", flag, err, flag))
	}
	return raw, nil
}

// unwrapPathError keeps only why a file could not be read: the caller names the file.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
