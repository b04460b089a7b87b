package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/mcpserver/front"
	"github.com/gorunner/gorunner/runner"
)

// MaxStdioCalls bounds the tools/calls a stdio session runs at once on its own workers
// (front.Calls); the ones beyond it wait in a queue (MaxQueuedStdioCalls).
const MaxStdioCalls = 64

// MaxQueuedStdioCalls bounds the tools/calls of a stdio session waiting for one of the
// MaxStdioCalls to end; past it the session reads no more lines until one does (as
// mcp-go's stdio server, whose queue holds 100, does).
const MaxQueuedStdioCalls = 100

// MaxStdioLineBytes caps one JSON-RPC message read over stdio, as limits.MaxBodyBytes caps
// an HTTP request body. A longer line is answered with lineTooLongAnswer as soon as it
// passes the cap, and its rest is skipped up to its newline, never held. Messages are
// newline-delimited and hold no newline, so what follows is the next message: the session
// goes on.
const MaxStdioLineBytes = limits.MaxBodyBytes

// stdioSessionID is the ID mcp-go gives its one stdio session.
const stdioSessionID = "stdio"

// ServeStdio serves MCP over in and out (the production tools) as principal p until in
// ends or ctx is done. Nothing else may write to out.
func (s *Server) ServeStdio(ctx context.Context, p auth.Principal, in io.Reader, out io.Writer) error {
	env := s.envs[runner.EnvProduction]
	std := server.NewStdioServer(env.mcp)
	std.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelError))
	ctx, cancel := context.WithCancel(auth.WithPrincipal(ctx, p))
	defer cancel()
	c := newStdioConn(env, out, s.log)
	std.SetContextFunc(c.calls.Serve)
	err := std.Listen(ctx, c.route(ctx, env.router, in), c.out)
	c.calls.Stop() // as mcp-go stops its tool call workers before Listen returns
	return err
}

// stdioConn is the stdio side of one session (front.Conn): lines in, lines out.
type stdioConn struct {
	out   *lineWriter
	calls *front.Calls
	// answers are the task requests being answered, each on a goroutine of its own.
	answers sync.WaitGroup
}

func newStdioConn(env *environment, out io.Writer, log *slog.Logger) *stdioConn {
	w := &lineWriter{out: out}
	return &stdioConn{out: w, calls: front.NewCalls(env.mcp, w.sendErr,
		front.CallsConfig{Max: MaxStdioCalls, MaxQueued: MaxQueuedStdioCalls, Log: log})}
}

// route hands each line read from in to router, in order, and passes the lines it leaves
// to mcp-go through the returned reader, until in ends or ctx is done; mcp-go must write
// to out through the same lineWriter so that whole messages never interleave.
func (c *stdioConn) route(ctx context.Context, router *front.Router, in io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		defer func() {
			c.answers.Wait()
			c.calls.Stop()
			pw.Close()
		}()
		rd := bufio.NewReaderSize(in, 64<<10)
		for ctx.Err() == nil {
			line, rest, err := readLine(rd)
			if errors.Is(err, errLineTooLong) {
				c.out.send(lineTooLongAnswer)
				err = nil
				if rest {
					err = skipLine(rd)
				}
			}
			if len(line) > 0 {
				if outcome, _ := router.Route(ctx, line, c); outcome == front.Pass {
					if _, werr := pw.Write(line); werr != nil {
						return
					}
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return pr
}

// Admit admits every task request: a 2025-11-25 one belongs to the one stdio session,
// whose client can be asked on the same lines.
func (c *stdioConn) Admit(t front.Task, _ *front.Message) (string, bool, bool) {
	if mcp.IsModernProtocol(t.Version()) {
		return "", false, true
	}
	return stdioSessionID, true, true
}

// Go answers on a goroutine of its own: the reader goes on with the next line.
func (c *stdioConn) Go(answer func()) { c.answers.Go(answer) }

// Calls are the session's own tools/call workers.
func (c *stdioConn) Calls() *front.Calls { return c.calls }

// Send writes msg as one line.
func (c *stdioConn) Send(msg any) error { return c.out.sendErr(msg) }

// Reply writes the answer as one line.
func (c *stdioConn) Reply(r front.Reply) { c.out.send(r.Msg) }

// errLineTooLong: a line passed MaxStdioLineBytes.
var errLineTooLong = errors.New("the message is longer than the stdio limit")

// lineTooLongAnswer answers a line over MaxStdioLineBytes. Its id is null: the id may be
// in the part of the line that is not kept.
var lineTooLongAnswer = front.Refusal(mcp.INVALID_REQUEST,
	fmt.Sprintf("the message is longer than %d bytes; it is skipped up to its newline", MaxStdioLineBytes))

// readLine reads one line, its newline included, holding at most MaxStdioLineBytes of it;
// past that it returns errLineTooLong at once, and rest says whether the line goes on
// (skipLine skips it).
func readLine(rd *bufio.Reader) (line []byte, rest bool, err error) {
	for {
		chunk, err := rd.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		if len(line)+len(chunk) > MaxStdioLineBytes {
			return nil, full, errLineTooLong
		}
		line = append(line, chunk...)
		if !full {
			return line, false, err
		}
	}
}

// skipLine reads up to and through the next newline, holding none of it.
func skipLine(rd *bufio.Reader) error {
	for {
		_, err := rd.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// lineWriter writes whole newline-terminated messages, one at a time.
type lineWriter struct {
	mu  sync.Mutex
	out io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out.Write(p)
}

// send writes v as one JSON line.
func (l *lineWriter) send(v any) { _ = l.sendErr(v) }

// sendErr is send, saying whether it failed.
func (l *lineWriter) sendErr(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = l.Write(append(b, '\n'))
	return err
}
