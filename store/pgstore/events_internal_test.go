package pgstore

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/events"
)

// TestEncodeNotices: a message's topics are split into notices of at most maxNotice bytes
// that decode back to all of them, in order; a topic that alone is one byte past what a
// notice holds becomes a notice to re-read everything.
func TestEncodeNotices(t *testing.T) {
	t.Parallel()
	many := make([]events.Topic, 2_000)
	for i := range many {
		many[i] = events.Run(fmt.Sprintf("run-%d", i))
	}
	fits := maxNotice - len("origin") - 20 - 8 // the longest topic a notice holds alone
	tests := []struct {
		name    string
		topics  []events.Topic
		notices int
		all     bool
	}{
		{"none", nil, 0, false},
		{"one", many[:1], 1, false},
		{"many", many, 5, false},
		{"longest that fits", []events.Topic{events.Topic(strings.Repeat("x", fits))}, 1, false},
		{"one byte past", []events.Topic{events.Topic(strings.Repeat("x", fits+1))}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			notices, err := encodeNotices(events.Message{Origin: "origin", Topics: tt.topics})
			require.NoError(t, err)
			require.Equal(t, tt.notices, len(notices))
			var got []events.Topic
			for _, n := range notices {
				require.LessOrEqual(t, len(n), maxNotice)
				m, ok := decodeNotice(n)
				require.True(t, ok)
				require.Equal(t, tt.all, m.All)
				if !m.All {
					require.Equal(t, "origin", m.Origin)
				}
				got = append(got, m.Topics...)
			}
			if !tt.all {
				require.True(t, slices.Equal(tt.topics, got), "every topic, in order")
			}
		})
	}
}
