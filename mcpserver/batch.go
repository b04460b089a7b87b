package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/mcpserver/front"
)

// MaxBatchMessages bounds the messages of one JSON-RPC batch (protocol version 2025-03-26,
// the only one that has them); they are answered at once, each as if POSTed alone.
const MaxBatchMessages = 64

// batchVersion is the protocol version that decides whether r may carry a batch: its
// header; else the one its session negotiated; else 2025-03-26, which a server assumes of
// a request that says none (MCP 2025-06-18, "Protocol Version Header").
func (t *httpTransport) batchVersion(r *http.Request) string {
	if v := r.Header.Get(server.HeaderKeyProtocolVersion); v != "" {
		return v
	}
	if v, _ := t.held.version(t.env.name, principalID(r.Context()), r.Header.Get(sessionHeader)); v != "" {
		return v
	}
	return mcp.ProtocolVersion20250326
}

// serveBatch answers a JSON-RPC batch. MCP allowed batches in protocol version 2025-03-26
// only (2025-06-18 removed them), so in any other a batch is an Invalid Request (-32600).
// In 2025-03-26 its session is checked once, each message is answered as if POSTed alone
// with the batch's headers (batchAnswer), and the responses go out as one JSON array, or
// 202 when there are none (only notifications and responses were sent).
func (t *httpTransport) serveBatch(w http.ResponseWriter, r *http.Request, body []byte) {
	if v := t.batchVersion(r); v != mcp.ProtocolVersion20250326 {
		writeRPCError(w, mcp.INVALID_REQUEST, fmt.Sprintf("JSON-RPC batches are not allowed in protocol version %s (MCP allowed them in 2025-03-26 only); send each message in a request of its own", v))
		return
	}
	if problem, status := legacySessionProblem(r, t.env, r.Header.Get(sessionHeader)); status != 0 {
		http.Error(w, problem, status)
		return
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(body, &msgs); err != nil {
		writeRPCError(w, mcp.PARSE_ERROR, "the batch is not valid JSON: "+err.Error())
		return
	}
	if problem := batchProblem(msgs); problem != "" {
		writeRPCError(w, mcp.INVALID_REQUEST, problem)
		return
	}
	answers := make([]json.RawMessage, len(msgs))
	var wg sync.WaitGroup
	for i, m := range msgs {
		wg.Go(func() { answers[i] = t.batchAnswer(r, m) })
	}
	wg.Wait()
	answers = slices.DeleteFunc(answers, func(a json.RawMessage) bool { return a == nil })
	if len(answers) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answers)
}

// batchProblem says why msgs cannot be answered as a batch, or "": none, more than
// MaxBatchMessages, or an initialize among them (it opens a session, whose ID goes out in
// the header of its own answer).
func batchProblem(msgs []json.RawMessage) string {
	switch {
	case len(msgs) == 0:
		return "the batch is empty"
	case len(msgs) > MaxBatchMessages:
		return fmt.Sprintf("the batch holds %d messages, at most %d are allowed", len(msgs), MaxBatchMessages)
	}
	for _, m := range msgs {
		var msg front.Message
		if json.Unmarshal(m, &msg) == nil && msg.Method == string(mcp.MethodInitialize) {
			return "initialize cannot be batched: send it alone"
		}
	}
	return ""
}

// batchAnswer answers m, one message of r's batch, as serveMessage answers a message
// POSTed alone with r's headers, but as JSON only (what the server would notify while it
// serves m is dropped: the batch's answer is one JSON array). It returns the response; nil
// for none (a notification, a response); or, when m was refused over HTTP, a JSON-RPC
// error with the refusal's text.
func (t *httpTransport) batchAnswer(r *http.Request, m json.RawMessage) json.RawMessage {
	sub := r.Clone(r.Context())
	sub.Header.Set("Accept", "application/json")
	sub.Body, sub.ContentLength = io.NopCloser(bytes.NewReader(m)), int64(len(m))
	rec := &recorded{header: http.Header{}}
	t.serveMessage(rec, sub, m)
	body := bytes.TrimSpace(rec.body.Bytes())
	if len(body) > 0 && body[0] == '{' && json.Valid(body) {
		return body
	}
	var msg front.Message
	if (len(body) == 0 && rec.status < http.StatusBadRequest) || json.Unmarshal(m, &msg) != nil || len(msg.ID) == 0 {
		return nil
	}
	out, err := json.Marshal(front.Answer(msg.ID, nil, front.NewError(mcp.INVALID_REQUEST, strings.TrimSpace(string(body)), nil)))
	if err != nil {
		return nil
	}
	return out
}

// writeRPCError answers a POST with a JSON-RPC error of no id, status 400.
func writeRPCError(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(front.Refusal(code, message))
}

// recorded is a ResponseWriter that keeps the answer in memory; it cannot flush, so
// mcp-go answers with JSON, never an event stream.
type recorded struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (d *recorded) Header() http.Header { return d.header }
func (d *recorded) Write(b []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	return d.body.Write(b)
}
func (d *recorded) WriteHeader(status int) {
	if d.status == 0 {
		d.status = status
	}
}
