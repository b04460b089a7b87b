package main

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/gorunner/gorunner/client"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/wire"
)

// Intervals of following a run: how often the live view asks for the run and redraws, and
// how long a quiet wait pauses while a run waits on a hook or a sleep (which ?wait= does
// not hold for).
const (
	livePoll     = 250 * time.Millisecond
	liveFrame    = 100 * time.Millisecond
	waitingPause = time.Second
)

// followFlags say whether and how long a command waits for a run to end.
type followFlags struct {
	wait    bool
	timeout time.Duration
}

func (f *followFlags) addTo(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&f.wait, "wait", "w", false, "wait for the run to end: live steps on a terminal, the final run as JSON when piped")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 10*time.Minute, "with --wait, how long to wait before exiting with code 3")
}

const exitCodesHelp = `
Exit codes with --wait: 0 the run completed, 1 it failed or was cancelled (or the call
failed), 2 the command line is wrong, 3 the run was still going when --timeout passed.`

func newRunCommand(o *clientOpts) *cobra.Command {
	var (
		input, key, env string
		follow          followFlags
	)
	cmd := &cobra.Command{
		Use:   "run NAME",
		Short: "Start a run of a workflow, and optionally follow it to the end",
		Long: "Start a run of the workflow NAME (its latest published version; with --env test, its draft).\n" +
			"--key is sent as Idempotency-Key: running the same command again with the same key and input\n" +
			"answers with the first run instead of starting another." + exitCodesHelp,
		Example: `  gorunner run hello --input '{"name": "Ada"}' --wait
  gorunner run process-order --input @order.json --key order-1001
  gorunner run hello --env test --input '{"name": "Ada"}' -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeWorkflows,
		RunE: func(cmd *cobra.Command, args []string) error {
			body := []byte("{}")
			if input != "" {
				var err error
				if body, err = jsonArg(cmd, "input", input); err != nil {
					return err
				}
			}
			if err := checkEnv(env); err != nil {
				return err
			}
			return o.startRun(cmd, client.Request{
				Method: "POST", Path: "/api/workflows/" + url.PathEscape(args[0]) + "/run",
				Query: url.Values{"environment": {env}}, Body: body, Key: key,
			}, follow)
		},
	}
	cmd.Flags().StringVarP(&input, "input", "i", "", "the run input: a JSON object, or @FILE (@- for stdin)")
	cmd.Flags().StringVarP(&key, "key", "k", "", "idempotency key: a retry with the same key replays the first answer")
	cmd.Flags().StringVar(&env, "env", runner.EnvProduction, "environment: production (latest version) or test (the draft)")
	follow.addTo(cmd)
	return o.addTo(cmd)
}

// checkEnv refuses an --env other than production or test.
func checkEnv(env string) error {
	if env != runner.EnvProduction && env != runner.EnvTest {
		return usageError(fmt.Errorf("--env %q: use production or test", env))
	}
	return nil
}

// startRun makes a call that starts a run (run, rerun) and prints or follows the run.
func (o *clientOpts) startRun(cmd *cobra.Command, req client.Request, follow followFlags) error {
	if follow.wait && follow.timeout <= 0 { // checked before the run starts
		return usageError(fmt.Errorf("--timeout must be positive, got %s", follow.timeout))
	}
	c, p, err := o.clientAndPrinter(cmd)
	if err != nil {
		return err
	}
	var run wire.Run
	if _, _, err := c.Call(cmd.Context(), req, &run); err != nil {
		return err
	}
	if follow.wait {
		return followRun(cmd.Context(), c, p, &run, follow.timeout)
	}
	return p.either(&run, func() error {
		return p.line("Started run %s of %s (%s).\nFollow it with: gorunner runs get %s --wait", printable(run.ID), printable(run.Workflow), printable(run.Environment), printable(run.ID))
	})
}

// clientAndPrinter is what most client commands start with.
func (o *clientOpts) clientAndPrinter(cmd *cobra.Command) (*client.Client, *printer, error) {
	p, err := o.printer(cmd)
	if err != nil {
		return nil, nil, err
	}
	c, err := o.client()
	return c, p, err
}

// followRun waits up to timeout for run to end, live on a terminal, then prints it and
// returns the error that carries the exit code of its status.
func followRun(ctx context.Context, c *client.Client, p *printer, run *wire.Run, timeout time.Duration) error {
	var err error
	if p.tty && !p.json {
		run, err = followLive(ctx, c, p, run, timeout)
	} else {
		run, err = waitQuietly(ctx, c, run, timeout)
	}
	if err != nil {
		return err
	}
	switch {
	case p.json:
		err = p.JSON(run)
	case run.Status.Terminal():
		err = p.line("%s", colored(p, summary(run)))
	}
	if err != nil {
		return err
	}
	return exitFor(run, timeout)
}

// exitFor is nil for a completed run, else the error with the exit code of its status.
func exitFor(r *wire.Run, timeout time.Duration) error {
	switch r.Status {
	case runner.StatusCompleted:
		return nil
	case runner.StatusFailed, runner.StatusCancelled:
		return &exitError{code: 1, err: fmt.Errorf("run %s %s: %s", r.ID, r.Status, runErrorText(r))}
	}
	return &exitError{code: 3, err: fmt.Errorf("run %s is still %s after %s; follow it with: gorunner runs get %s --wait", r.ID, r.Status, timeout, r.ID)}
}

// getRun reads a run, holding the answer up to wait while it is pending or running.
func getRun(ctx context.Context, c *client.Client, id string, wait time.Duration) (*wire.Run, error) {
	q := url.Values{}
	if wait > 0 {
		q.Set("wait", wait.Round(time.Millisecond).String())
	}
	var r wire.Run
	_, _, err := c.Call(ctx, client.Request{Method: "GET", Path: "/api/runs/" + url.PathEscape(id), Query: q}, &r)
	return &r, err
}

// waitQuietly waits for run to end with long polls, pausing while it waits on a hook or
// a sleep, and returns its last state.
func waitQuietly(ctx context.Context, c *client.Client, run *wire.Run, timeout time.Duration) (*wire.Run, error) {
	deadline := time.Now().Add(timeout)
	for !run.Status.Terminal() {
		left := time.Until(deadline)
		if left <= 0 {
			return run, nil
		}
		if run.Status == runner.StatusWaiting && !pause(ctx, min(waitingPause, left)) {
			return run, nil
		}
		next, err := getRun(ctx, c, run.ID, min(left, 60*time.Second))
		if err != nil {
			return run, err
		}
		run = next
	}
	return run, nil
}

// pause waits d and reports whether ctx is still live.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// polled is one state of a run read by pollRun, or the error that stopped it.
type polled struct {
	run *wire.Run
	err error
}

// pollRun reads run id every interval and sends each state until the run ends, a read
// fails or ctx is done; then it closes the channel.
func pollRun(ctx context.Context, c *client.Client, id string, interval time.Duration) <-chan polled {
	out := make(chan polled)
	go func() {
		defer close(out)
		for pause(ctx, interval) {
			r, err := getRun(ctx, c, id, 0)
			select {
			case out <- polled{run: r, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil || r.Status.Terminal() {
				return
			}
		}
	}()
	return out
}

// followLive redraws the run's steps in place until it ends, timeout passes or the user
// interrupts; the run goes on in the last two cases.
func followLive(ctx context.Context, c *client.Client, p *printer, run *wire.Run, timeout time.Duration) (*wire.Run, error) {
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	updates := pollRun(pctx, c, run.ID, livePoll)
	frames := time.NewTicker(liveFrame)
	defer frames.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	view := newLiveView(p.out)
	fmt.Fprint(p.out, "\x1b[?25l")       // hide the cursor while redrawing
	defer fmt.Fprint(p.out, "\x1b[?25h") // and show it again
	view.draw(run)
	for !run.Status.Terminal() {
		select {
		case u, ok := <-updates:
			if !ok {
				return run, nil
			}
			if u.err != nil {
				return run, u.err
			}
			run = u.run
		case <-frames.C:
		case <-deadline.C:
			return run, nil
		case <-ctx.Done():
			return run, nil
		}
		view.draw(run)
	}
	return run, nil
}

var ansiPattern = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")

// colored keeps s's colours on a terminal and strips them elsewhere.
func colored(p *printer, s string) string {
	if p.tty {
		return s
	}
	return ansiPattern.ReplaceAllString(s, "")
}
