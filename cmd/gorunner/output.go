package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// printer writes a command's result: tables and lines for a person at a terminal, JSON for
// a program reading a pipe (or whoever asks with -o json).
type printer struct {
	out  io.Writer
	json bool
	// tty says whether out is a terminal, where live views may redraw lines.
	tty bool
}

// printer picks the output form from -o and whether stdout is a terminal.
func (o *clientOpts) printer(cmd *cobra.Command) (*printer, error) {
	out := cmd.OutOrStdout()
	p := &printer{out: out, tty: isTerminal(out)}
	switch o.output {
	case "":
		p.json = !p.tty
	case "json":
		p.json = true
	case "table":
	default:
		return nil, usageError(fmt.Errorf("-o %q: use table or json", o.output))
	}
	return p, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// JSON writes v indented, as the API spells it.
func (p *printer) JSON(v any) error {
	enc := json.NewEncoder(p.out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes rows under header, aligned; the cells come from the server (printable).
func (p *printer) table(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(p.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = printable(c) // a tab or newline in a title would break the table too
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// either writes v as JSON, or calls human for the person at the terminal.
func (p *printer) either(v any, human func() error) error {
	if p.json {
		return p.JSON(v)
	}
	return human()
}

// line writes one line for a person.
func (p *printer) line(format string, args ...any) error {
	_, err := fmt.Fprintf(p.out, format+"\n", args...)
	return err
}

// humanDuration is a duration rounded for reading: 120ms, 1.4s, 2m3s.
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// humanTime is t in local time, to the second.
func humanTime(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }
