package redisstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store"
)

// TestUnreachableReplies: a Redis that answers but cannot serve yet (loading its data
// after a restart, busy in a script, its master down, at its client limit) is
// store.ErrUnreachable like one that does not answer; any other error reply is not. Each
// reply comes from a server on a real socket that answers every command with it.
func TestUnreachableReplies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reply       string
		unreachable bool
	}{
		{"LOADING Redis is loading the dataset in memory", true},
		{"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.", true},
		{"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", true},
		{"ERR max number of clients reached", true},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", false},
		{"ERR Error running script (call to f_x): @user_script:1: boom", false},
		{"NOSCRIPT No matching script. Please use EVAL.", false},
	} {
		t.Run(strings.Fields(tc.reply)[0], func(t *testing.T) {
			t.Parallel()
			rdb := redis.NewClient(&redis.Options{Addr: replying(t, tc.reply), MaxRetries: -1, Protocol: 2, DisableIdentity: true})
			t.Cleanup(func() { _ = rdb.Close() })
			rdb.AddHook(unreachable{})
			err := rdb.Get(context.Background(), "k").Err()
			require.ErrorContains(t, err, tc.reply)
			require.Equal(t, tc.unreachable, errors.Is(err, store.ErrUnreachable), "%v", err)
		})
	}
}

// replying serves, until the test ends, a RESP server that answers every command with
// the error reply; it returns its address.
func replying(t *testing.T, reply string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go answer(c, reply)
		}
	}()
	return ln.Addr().String()
}

// answer reads the commands of c (RESP arrays of bulk strings) and answers each with the
// error reply, until c closes.
func answer(c net.Conn, reply string) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		n, err := respLength(r, '*')
		if err != nil {
			return
		}
		for range n {
			size, err := respLength(r, '$')
			if err != nil {
				return
			}
			if _, err := r.Discard(size + 2); err != nil {
				return
			}
		}
		if _, err := fmt.Fprintf(c, "-%s\r\n", reply); err != nil {
			return
		}
	}
}

// respLength reads a line "<kind><n>\r\n" and returns n.
func respLength(r *bufio.Reader, kind byte) (int, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 3 || line[0] != kind {
		return 0, fmt.Errorf("unexpected line %q", line)
	}
	return strconv.Atoi(strings.TrimSuffix(line[1:], "\r\n"))
}
