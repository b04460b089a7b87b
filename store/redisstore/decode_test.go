package redisstore

import (
	"testing"

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
