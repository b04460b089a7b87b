package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gorunner/gorunner/client"
)

// clientOpts are the flags every command that calls a running server takes.
type clientOpts struct {
	g      *globals
	url    string
	output string
}

// addTo gives cmd (and its subcommands) the client flags.
func (o *clientOpts) addTo(cmd *cobra.Command) *cobra.Command {
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.url, "url", client.DefaultURL, "server address (env GORUNNER_URL); the token comes from GORUNNER_TOKEN, else <data-dir>/admin-token")
	pf.StringVarP(&o.output, "output", "o", "", "output: table or json (default: table on a terminal, json when piped)")
	return cmd
}

// client builds the API client from the flags, GORUNNER_TOKEN and the admin-token file.
func (o *clientOpts) client() (*client.Client, error) {
	token, tokenErr := o.token()
	c, err := client.New(o.url, token, &client.Config{UserAgent: "gorunner-cli/" + version()})
	if err != nil {
		return nil, usageError(fmt.Errorf("--url %q: use an address such as %s", o.url, client.DefaultURL))
	}
	if tokenErr != nil {
		return nil, tokenErr
	}
	return c, nil
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

// advise is err with what to do about the client errors a user can fix: a server that
// does not answer, a token it refuses.
func advise(err error) error {
	var down *client.UnreachableError
	switch {
	case errors.As(err, &down):
		return fmt.Errorf("cannot reach GoRunner at %s: start it with `gorunner serve`, or set GORUNNER_URL to its address", down.URL)
	case client.IsStatus(err, http.StatusUnauthorized):
		return errors.New("the server refused the token (revoked or wrong): set GORUNNER_TOKEN to a valid token; `gorunner token create NAME` makes one")
	}
	return err
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
