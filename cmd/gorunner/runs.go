package main

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/gorunner/gorunner/client"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/wire"
)

func newRunsCommand(o *clientOpts) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "runs",
		Short:   "List, show, cancel, rerun and delete runs on a running server",
		Example: "  gorunner runs list --status failed\n  gorunner runs get 0190c6e2-… --wait",
	}
	cmd.AddCommand(newRunsListCommand(o), newRunsGetCommand(o), &cobra.Command{
		Use:     "cancel RUN_ID",
		Short:   "Cancel a run: the step running is interrupted, the steps left are cancelled",
		Example: "  gorunner runs cancel 0190c6e2-…",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, p, err := o.clientAndPrinter(cmd)
			if err != nil {
				return err
			}
			var r wire.Run
			if _, _, err := c.Call(cmd.Context(), client.Request{Method: "POST", Path: runPath(args[0]) + "/cancel"}, &r); err != nil {
				return err
			}
			return p.either(&r, func() error { return p.line("run %s: %s", printable(r.ID), printable(string(r.Status))) })
		},
	}, newRerunCommand(o), newRunsDeleteCommand(o))
	return o.addTo(cmd)
}

// newRunsDeleteCommand is `runs delete`: DELETE /api/runs/{id}.
func newRunsDeleteCommand(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:     "delete RUN_ID",
		Short:   "Delete an ended run now, with its steps and hooks (an active run is refused: cancel it first)",
		Example: "  gorunner runs delete 0190c6e2-…",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, p, err := o.clientAndPrinter(cmd)
			if err != nil {
				return err
			}
			if _, _, err := c.Call(cmd.Context(), client.Request{Method: "DELETE", Path: runPath(args[0])}, nil); err != nil {
				return err
			}
			return p.either(map[string]string{"deleted": args[0]}, func() error { return p.line("run %s: deleted", printable(args[0])) })
		},
	}
}

func runPath(id string) string { return "/api/runs/" + url.PathEscape(id) }

func newRunsListCommand(o *clientOpts) *cobra.Command {
	var (
		workflow, status string
		limit            int
	)
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List runs, newest first",
		Example: "  gorunner runs list\n  gorunner runs list --workflow hello --status failed --limit 100 -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkAtLeastOne("limit", limit); err != nil {
				return err
			}
			c, p, err := o.clientAndPrinter(cmd)
			if err != nil {
				return err
			}
			q := url.Values{}
			if workflow != "" {
				q.Set("workflow", workflow)
			}
			if status != "" {
				q.Set("status", status)
			}
			// the newest runs that match, through pages that end short (runner.Collect bounds them)
			runs, next, err := runner.Collect(limit, "", func(n int, cursor string) ([]*wire.Run, string, error) {
				q.Set("limit", strconv.Itoa(n))
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				page := []*wire.Run{}
				_, env, err := c.Call(cmd.Context(), client.Request{Method: "GET", Path: "/api/runs", Query: q}, &page)
				return page, env.NextCursor, err
			})
			if err != nil {
				return err
			}
			if next != "" && len(runs) < limit {
				fmt.Fprintf(cmd.ErrOrStderr(), "stopped after %d pages of runs, newest first; older ones may match too: narrow the list with --workflow or --status\n", runner.MaxListExamined/limits.MaxRunsExamined)
			}
			if runs == nil {
				runs = []*wire.Run{} // JSON: [], not null
			}
			return p.either(runs, func() error { return p.table(runRows(runs)) })
		},
	}
	cmd.Flags().StringVar(&workflow, "workflow", "", "only runs of this workflow (name or ID)")
	cmd.Flags().StringVar(&status, "status", "", "only runs in this status: "+runner.StatusList())
	cmd.Flags().IntVar(&limit, "limit", 20, fmt.Sprintf("how many runs at most (1–%d)", limits.MaxPage))
	return cmd
}

// runRows is the runs table: header and one row per run.
func runRows(runs []*wire.Run) ([]string, [][]string) {
	rows := make([][]string, len(runs))
	for i, r := range runs {
		took := "-"
		if r.FinishedAt != nil {
			took = humanDuration(runDuration(r))
		}
		rows[i] = []string{r.ID, r.Workflow, strconv.Itoa(r.Version), r.Environment, string(r.Status), humanTime(r.CreatedAt), took}
	}
	return []string{"ID", "WORKFLOW", "VERSION", "ENV", "STATUS", "CREATED", "TOOK"}, rows
}

func newRunsGetCommand(o *clientOpts) *cobra.Command {
	var follow followFlags
	cmd := &cobra.Command{
		Use:     "get RUN_ID",
		Short:   "Show a run with its steps, and optionally follow it to the end",
		Long:    "Show a run with its steps: a summary on a terminal, the run as JSON when piped." + exitCodesHelp,
		Example: "  gorunner runs get 0190c6e2-…\n  gorunner runs get 0190c6e2-… --wait --timeout 1m",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, p, err := o.clientAndPrinter(cmd)
			if err != nil {
				return err
			}
			r, err := getRun(cmd.Context(), c, args[0], 0)
			if err != nil {
				return err
			}
			if follow.wait {
				return followRun(cmd.Context(), c, p, r, follow.timeout)
			}
			return p.either(r, func() error { return showRun(p, r) })
		},
	}
	follow.addTo(cmd)
	return cmd
}

// showRun draws a run once, as the live view leaves it, with its summary.
func showRun(p *printer, r *wire.Run) error {
	view := newLiveView(p.out)
	for _, l := range view.lines(r) {
		if err := p.line("%s", colored(p, l+ansiReset)); err != nil {
			return err
		}
	}
	return p.line("%s", colored(p, summary(r)))
}

func newRerunCommand(o *clientOpts) *cobra.Command {
	var (
		key         string
		fromFailure bool
		follow      followFlags
	)
	cmd := &cobra.Command{
		Use:   "rerun RUN_ID",
		Short: "Start a new run with a run's input and environment, on the current version",
		Long: "Start a new run with the input and environment of RUN_ID, on the workflow's current version. " +
			"With --from-failure (a failed run), the new run takes over the outputs of the steps completed before the failure and begins at the failed step." + exitCodesHelp,
		Example: "  gorunner runs rerun 0190c6e2-… --wait\n  gorunner runs rerun 0190c6e2-… --key retry-1\n  gorunner runs rerun 0190c6e2-… --from-failure",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := client.Request{Method: "POST", Path: runPath(args[0]) + "/rerun", Key: key}
			if fromFailure {
				req.Query = url.Values{"from": {"failure"}}
			}
			return o.startRun(cmd, req, follow)
		},
	}
	cmd.Flags().StringVarP(&key, "key", "k", "", "idempotency key: a retry with the same key replays the first answer")
	cmd.Flags().BoolVar(&fromFailure, "from-failure", false, "reuse the outputs of the steps completed before the failure and begin at the failed step")
	follow.addTo(cmd)
	return cmd
}
