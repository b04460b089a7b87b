package schemas

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDurationStringIsShortest(t *testing.T) {
	t.Parallel()
	for in, want := range map[time.Duration]string{
		24 * time.Hour:          "24h",
		90 * time.Minute:        "1h30m",
		time.Minute:             "1m",
		1500 * time.Millisecond: "1.5s",
		100 * time.Millisecond:  "100ms",
		time.Hour + time.Second: "1h0m1s",
		0:                       "0s",
	} {
		require.Equal(t, want, Duration(in).String())
	}
}
