package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/wire"
)

// spinner is the frame sequence of a step in progress.
var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// ANSI sequences the live view uses; every terminal people use today knows them.
const (
	ansiClearLine = "\r\x1b[2K"
	ansiGreen     = "\x1b[32m"
	ansiRed       = "\x1b[31m"
	ansiYellow    = "\x1b[33m"
	ansiDim       = "\x1b[2m"
	ansiReset     = "\x1b[0m"
)

// liveView draws a run on a terminal as one line per step, redrawn in place: a spinner and
// the time so far while a step runs, a mark and its duration once it ends.
type liveView struct {
	w     io.Writer
	width func() int
	now   func() time.Time
	frame int
	drawn int // lines drawn last time, to move back over
}

func newLiveView(w io.Writer) *liveView {
	return &liveView{w: w, width: func() int { return terminalWidth(w) }, now: time.Now}
}

func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	return 80
}

// draw redraws r; each call advances the spinner.
func (v *liveView) draw(r *wire.Run) {
	v.frame++
	var b strings.Builder
	if v.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", v.drawn)
	}
	lines := v.lines(r)
	width := v.width()
	for _, l := range lines {
		b.WriteString(ansiClearLine + clip(l, width) + ansiReset + "\n")
	}
	v.drawn = len(lines)
	_, _ = io.WriteString(v.w, b.String())
}

// lines are the header and one line per step.
func (v *liveView) lines(r *wire.Run) []string {
	out := []string{fmt.Sprintf("%s %s %s· run %s · %s%s", v.runMark(r.Status), printable(r.Workflow), ansiDim, printable(r.ID), printable(r.Environment), ansiReset)}
	ids := make([]string, len(r.Steps))
	for i, s := range r.Steps {
		ids[i] = s.ID
	}
	ids = printableColumn(ids)
	for i, s := range r.Steps {
		out = append(out, fmt.Sprintf("  %s %s  %s", v.stepMark(s.Status), ids[i], v.stepDetail(r, s)))
	}
	return out
}

// printableColumn is cells from the server made printable and padded to one width. The
// width is measured on the text as printed, escapes spelled out, and as clip counts it:
// measured on the raw text, a cell holding a control or bidi character (longer once
// spelled out) or a multi-byte one (shorter in runes than in bytes) would push the
// column out of line.
func printableColumn(cells []string) []string {
	out := make([]string, len(cells))
	widths := make([]int, len(cells))
	width := 0
	for i, c := range cells {
		out[i] = printable(c)
		widths[i] = columns(out[i])
		width = max(width, widths[i])
	}
	for i, c := range out {
		out[i] = c + strings.Repeat(" ", width-widths[i])
	}
	return out
}

func (v *liveView) runMark(st runner.Status) string {
	switch st {
	case runner.StatusCompleted:
		return ansiGreen + "✓" + ansiReset
	case runner.StatusFailed:
		return ansiRed + "✗" + ansiReset
	case runner.StatusCancelled:
		return ansiYellow + "⊘" + ansiReset
	}
	return ansiYellow + spinner[v.frame%len(spinner)] + ansiReset
}

func (v *liveView) stepMark(st runner.StepStatus) string {
	switch st {
	case runner.StepCompleted:
		return ansiGreen + "✓" + ansiReset
	case runner.StepFailed:
		return ansiRed + "✗" + ansiReset
	case runner.StepCancelled:
		return ansiYellow + "⊘" + ansiReset
	case runner.StepSkipped:
		return ansiDim + "-" + ansiReset
	case runner.StepPending:
		return ansiDim + "·" + ansiReset
	}
	return ansiYellow + spinner[v.frame%len(spinner)] + ansiReset
}

// stepDetail is what a step line says after its ID: its status and time, and for a waiting
// step what it waits on.
func (v *liveView) stepDetail(r *wire.Run, s *wire.StepRecord) string {
	detail := string(s.Status)
	if s.StartedAt != nil {
		end := v.now()
		if s.FinishedAt != nil {
			end = *s.FinishedAt
		}
		detail += " " + humanDuration(end.Sub(*s.StartedAt))
	}
	if s.Attempts > 1 {
		detail += fmt.Sprintf(" (attempt %d)", s.Attempts)
	}
	if s.Status == runner.StepWaiting && r.WaitingOn != nil {
		switch {
		case r.WaitingOn.Hook != nil:
			detail += " · hook " + printable(r.WaitingOn.Hook.Token)
		case r.WaitingOn.SleepUntil != nil:
			detail += " · until " + humanTime(*r.WaitingOn.SleepUntil)
		}
	}
	if s.Error != nil {
		detail += " · " + printable(s.Error.Message)
	}
	return detail
}

// summary is what stays under the steps once the run ends or the wait is over.
func summary(r *wire.Run) string {
	switch r.Status {
	case runner.StatusCompleted:
		return fmt.Sprintf("%scompleted%s in %s → %s", ansiGreen, ansiReset, humanDuration(runDuration(r)), printable(compactJSON(r.Output)))
	case runner.StatusFailed, runner.StatusCancelled:
		return fmt.Sprintf("%s%s%s in %s: %s", ansiRed, r.Status, ansiReset, humanDuration(runDuration(r)), printable(runErrorText(r)))
	}
	return fmt.Sprintf("%s%s%s; follow it with: gorunner runs get %s --wait", ansiYellow, r.Status, ansiReset, printable(r.ID))
}

func runDuration(r *wire.Run) time.Duration {
	if r.FinishedAt == nil {
		return 0
	}
	start := r.CreatedAt
	if r.StartedAt != nil {
		start = *r.StartedAt
	}
	return r.FinishedAt.Sub(start)
}

// runErrorText is a run's error on one line.
func runErrorText(r *wire.Run) string {
	if r.Error == nil {
		return string(r.Status)
	}
	if r.Error.Step != "" {
		return fmt.Sprintf("%s at step %s: %s", r.Error.Code, r.Error.Step, r.Error.Message)
	}
	return r.Error.Code + ": " + r.Error.Message
}

func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// clip cuts a line to the terminal's width, as columns counts it, so that it never wraps
// and the view can move back over it.
func clip(s string, width int) string {
	var b strings.Builder
	shown := 0
	eachRune(s, func(r rune, visible bool) {
		if visible {
			if shown >= width-1 {
				return
			}
			shown++
		}
		b.WriteRune(r)
	})
	return b.String()
}

// columns is how many terminal columns s takes: one per rune, none for the ANSI sequences
// the CLI writes itself. (Server text never holds one raw: printable spells it out.) Wide
// glyphs count one column, as text/tabwriter counts them in tables.
func columns(s string) int {
	n := 0
	eachRune(s, func(_ rune, visible bool) {
		if visible {
			n++
		}
	})
	return n
}

// eachRune calls f with each rune of s and whether it is shown, rather than part of an
// ANSI escape sequence: the one place clip and columns tell the two apart.
func eachRune(s string, f func(r rune, visible bool)) {
	const (
		text = iota
		escape
		csi
	)
	state := text
	for _, r := range s {
		switch {
		case state == text && r == '\x1b':
			state = escape
		case state == escape:
			state = csi
		case state == csi:
			if r >= '@' && r <= '~' {
				state = text
			}
		default:
			f(r, true)
			continue
		}
		f(r, false)
	}
}
