package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCopyProgress(t *testing.T) {
	var piped bytes.Buffer
	p := newCopyProgress(&piped)
	p.Start(4)
	p.Advance("runs", 2)
	p.Advance("hooks", 4)
	p.end()
	require.Equal(t, "copied 2 of 4 records (runs)\ncopied 4 of 4 records (hooks)\n", piped.String())

	var term bytes.Buffer
	p = &copyProgress{out: &term, tty: true}
	p.Start(4)
	p.Advance("runs", 2)
	p.end()
	half := strings.Repeat("█", copyBarWidth/2) + strings.Repeat("░", copyBarWidth/2)
	require.Equal(t, "\r\x1b[K"+half+" 2/4 runs\n", term.String())
}
