package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gorunner/gorunner/client"
)

// healthTimeout bounds `gorunner health`: a container's HEALTHCHECK waits no longer.
const healthTimeout = 3 * time.Second

// newHealthCommand checks a running server's /healthz, for a container image that has no
// curl (the Dockerfile's HEALTHCHECK).
func newHealthCommand() *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Exit 0 if the server at --url answers /healthz, else 1 (a container's health check)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), healthTimeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/")+"/healthz", nil)
			if err != nil {
				return usageError(fmt.Errorf("--url %q: %w", url, err))
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("GoRunner at %s is not healthy: %w", url, err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("GoRunner at %s is not healthy: /healthz answered %s", url, res.Status)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", client.DefaultURL, "server address (env GORUNNER_URL)")
	return cmd
}
