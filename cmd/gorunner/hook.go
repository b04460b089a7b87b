package main

import (
	"fmt"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/gorunner/gorunner/client"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/wire"
)

func newHookCommand(o *clientOpts) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "hook",
		Short:   "Send payloads to runs waiting on hooks",
		Example: `  gorunner hook resume order:1001 --payload '{"confirmed": true}'`,
	}
	var payload, key, env string
	resume := &cobra.Command{
		Use:   "resume TOKEN",
		Short: "Send a payload to the run whose hook holds TOKEN",
		Long: "Send a payload to the run that holds the hook token TOKEN; its next hook step on that token takes it.\n" +
			"No run holds the token yet → NOT_FOUND: the run may not have reached its hook, so retry shortly.",
		Example: `  gorunner hook resume order:1001 --payload '{"confirmed": true}'
  gorunner hook resume order:1001 --payload @confirmation.json --key confirm-1001`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := []byte("null")
			if payload != "" {
				var err error
				if body, err = jsonArg(cmd, "payload", payload); err != nil {
					return err
				}
			}
			if err := checkEnv(env); err != nil {
				return err
			}
			c, p, err := o.clientAndPrinter(cmd)
			if err != nil {
				return err
			}
			var res wire.Resume
			req := client.Request{Method: "POST", Path: "/api/hooks/" + url.PathEscape(args[0]) + "/resume",
				Query: url.Values{"environment": {env}}, Body: body, Key: key}
			if _, _, err := c.Call(cmd.Context(), req, &res); err != nil {
				return err
			}
			return p.either(res, func() error { return p.line("%s", resumeLine(res)) })
		},
	}
	resume.Flags().StringVarP(&payload, "payload", "p", "", "the payload: JSON, or @FILE (@- for stdin); default null")
	resume.Flags().StringVarP(&key, "key", "k", "", "idempotency key: a retry with the same key replays the first answer")
	resume.Flags().StringVar(&env, "env", runner.EnvProduction, "environment of the token: production or test")
	cmd.AddCommand(resume)
	return o.addTo(cmd)
}

// resumeLine says on a terminal what became of a payload: delivered, with the run's status
// after it, or queued, with why.
func resumeLine(res wire.Resume) string {
	if res.Delivery == runner.Queued {
		return fmt.Sprintf("%s: payload queued for run %s: %s", printable(res.Token), printable(res.RunID), printable(res.Message))
	}
	line := fmt.Sprintf("%s: payload delivered to run %s", printable(res.Token), printable(res.RunID))
	if res.Run != nil {
		line += ", now " + string(res.Run.Status)
	}
	return line
}
