// Command gorunner runs durable workflows and serves them as MCP tools: `gorunner serve`
// is the REST API, the /mcp endpoint, the webhooks and a worker pool over one store.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := advise(newRootCommand().ExecuteContext(ctx))
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gorunner:", errorText(err))
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }
