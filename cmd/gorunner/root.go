package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gorunner/gorunner/internal/logredact"
)

// globals are the flags every command takes.
type globals struct {
	dataDir   string
	store     string
	logFormat string
	logLevel  string
}

func newRootCommand() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "gorunner",
		Short:         "Durable workflows, served to AI agents as MCP tools",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags()); err != nil {
				return usageError(err)
			}
			return nil
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.dataDir, "data-dir", "./.gorunner", "data directory (env GORUNNER_DATA)")
	pf.StringVar(&g.store, "store", "", "store: sqlite:PATH (default <data-dir>/gorunner.db) redis://HOST:PORT/DB or postgres://USER@HOST:PORT/DB (env GORUNNER_STORE)")
	pf.StringVar(&g.logFormat, "log-format", "text", "log format: text or json (env GORUNNER_LOG_FORMAT)")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn or error (env GORUNNER_LOG_LEVEL)")
	root.AddCommand(newServeCommand(g), newMCPCommand(g), newTokenCommand(g), newAuthCommand(g), newVersionCommand())
	o := &clientOpts{g: g}
	root.AddCommand(newWorkflowCommand(o), newRunCommand(o), newRunsCommand(o), newHookCommand(o), newCompletionCommand())
	markUsageErrors(root)
	return root
}

// envName is the environment twin of a flag: GORUNNER_<FLAG>, but GORUNNER_DATA for
// --data-dir as SPEC §7 names it.
func envName(flag string) string {
	if flag == "data-dir" {
		return "GORUNNER_DATA"
	}
	return "GORUNNER_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its GORUNNER_* twin.
func applyEnv(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || err != nil {
			return
		}
		name := envName(f.Name)
		if v, ok := os.LookupEnv(name); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %w", name, v, e)
			}
		}
	})
	return err
}

// logger is the process's logger on stderr, as the flags ask; secrets are redacted from
// every line, whichever command and package logs it.
func (g *globals) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, usageError(fmt.Errorf("--log-level %q: use debug, info, warn or error", g.logLevel))
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch g.logFormat {
	case "text":
		h = slog.NewTextHandler(os.Stderr, opts)
	case "json":
		h = slog.NewJSONHandler(os.Stderr, opts)
	default:
		return nil, usageError(fmt.Errorf("--log-format %q: use text or json", g.logFormat))
	}
	return slog.New(logredact.Handler(h)), nil
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "gorunner", version())
		},
	}
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
