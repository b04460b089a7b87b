package redisstore

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/events"
)

// TestDecode checks how what the subscription receives becomes a Message: a
// resubscription (go-redis reconnected, messages may have been lost) is All, the catalog
// scripts' channel is events.Catalog, and a payload that is not ours is skipped.
func TestDecode(t *testing.T) {
	t.Parallel()
	e := &Events{s: &Store{k: keys{p: "p:"}}}
	tests := []struct {
		name   string
		raw    any
		want   events.Message
		wantOK bool
	}{
		{"resubscribed", &redis.Subscription{Kind: "subscribe", Channel: "p:signal:events"}, events.Message{All: true}, true},
		{"unsubscribed", &redis.Subscription{Kind: "unsubscribe", Channel: "p:signal:events"}, events.Message{All: true}, false},
		{"catalog", &redis.Message{Channel: "p:signal:catalog", Payload: "7"}, events.Message{Topics: []events.Topic{events.Catalog}}, true},
		{"events", &redis.Message{Channel: "p:signal:events", Payload: `{"o":"a","t":["due"]}`},
			events.Message{Origin: "a", Topics: []events.Topic{events.Due}}, true},
		{"garbage", &redis.Message{Channel: "p:signal:events", Payload: `nope`}, events.Message{}, false},
		{"pong", &redis.Pong{}, events.Message{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := e.decode(tt.raw)
			require.Equal(t, tt.wantOK, ok)
			if ok {
				require.Equal(t, tt.want, got)
			}
		})
	}
}

// TestTS checks the fixed-width time encoding against its definition.
func TestTS(t *testing.T) {
	t.Parallel()
	for _, tm := range []time.Time{{}, time.Unix(0, 1), time.Unix(1796075250, 19362128), time.Unix(0, math.MaxInt64),
		time.Unix(-1, 0), time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.FixedZone("X", 3600))} {
		want := fmt.Sprintf("%020d", tm.UnixNano())
		if tm.IsZero() {
			want = fmt.Sprintf("%020d", 0)
		}
		require.Equal(t, want, ts(tm), tm.String())
		back, err := parseTS(ts(tm))
		require.NoError(t, err)
		if !tm.IsZero() && tm.UnixNano() >= 0 {
			require.True(t, tm.Equal(back), tm.String())
		}
	}
}
