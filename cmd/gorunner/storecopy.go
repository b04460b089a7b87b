package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gorunner/gorunner/store/storecopy"
)

func newStoreCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "store", Short: "Work on stores themselves"}
	cmd.AddCommand(newStoreCopyCommand(g))
	return cmd
}

func newStoreCopyCommand(g *globals) *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "copy --from STORE --to STORE",
		Short: "Copy everything a store holds into an empty store of any kind",
		Long: "Copy every workflow, version, run, hook, key, token, connection and grant from one store\n" +
			"(SQLite, PostgreSQL or Redis) into another of any kind, which must be empty.\n" +
			"Serve the target with the same data directory\n" +
			"(its secret.key opens the sealed secrets and webhook tokens). Stop the servers on the\n" +
			"source first: what they write during the copy may not be copied.",
		Example: "  gorunner store copy --from sqlite:./.gorunner/gorunner.db --to postgres://gorunner@db:5432/gorunner",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, err := copyStoreURL("--from", from)
			if err != nil {
				return err
			}
			dst, err := copyStoreURL("--to", to)
			if err != nil {
				return err
			}
			return copyStores(cmd, src, dst)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the store to copy: sqlite:PATH, postgres://… or redis://… (required)")
	cmd.Flags().StringVar(&to, "to", "", "the empty store to copy into: sqlite:PATH, postgres://… or redis://… (required)")
	return cmd
}

// copyStoreURL reads --from or --to as --store is read; it is required.
func copyStoreURL(flag, value string) (string, error) {
	if value == "" {
		return "", usageError(fmt.Errorf("%s is required", flag))
	}
	return storeURL(&globals{store: value})
}

// copyStores copies everything from src into dst, showing its progress on stderr.
func copyStores(cmd *cobra.Command, src, dst string) error {
	ctx := cmd.Context()
	from, err := openStoreAt(ctx, src)
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := openStoreAt(ctx, dst)
	if err != nil {
		return err
	}
	defer to.Close()
	fs, fok := from.(storecopy.Source)
	ts, tok := to.(storecopy.Target)
	if !fok || !tok {
		return errors.New("this store cannot be copied")
	}
	p := newCopyProgress(cmd.ErrOrStderr())
	if err := storecopy.Copy(ctx, fs, ts, p); err != nil {
		p.end()
		return err
	}
	p.end()
	fmt.Fprintf(cmd.OutOrStdout(), "copied %d records\n", p.total)
	return nil
}

// copyBarWidth is how many cells the progress bar of a copy has on a terminal.
const copyBarWidth = 30

// copyProgress shows a copy's progress: a bar redrawn in place on a terminal, a line per
// batch when piped.
type copyProgress struct {
	out   io.Writer
	tty   bool
	total int64
	drawn bool
}

func newCopyProgress(out io.Writer) *copyProgress {
	return &copyProgress{out: out, tty: isTerminal(out)}
}

// Start is told how many records the copy moves.
func (p *copyProgress) Start(total int64) { p.total = total }

// Advance shows done records of the total copied, the last of kind.
func (p *copyProgress) Advance(kind storecopy.Kind, done int64) {
	if !p.tty {
		fmt.Fprintf(p.out, "copied %d of %d records (%s)\n", done, p.total, kind)
		return
	}
	filled := copyBarWidth
	if p.total > 0 {
		filled = int(done * copyBarWidth / p.total)
	}
	bar := strings.Repeat("█", filled) + strings.Repeat("░", copyBarWidth-filled)
	fmt.Fprintf(p.out, "\r\x1b[K%s %d/%d %s", bar, done, p.total, kind)
	p.drawn = true
}

// end ends the bar's line on a terminal.
func (p *copyProgress) end() {
	if p.drawn {
		fmt.Fprintln(p.out)
	}
}
