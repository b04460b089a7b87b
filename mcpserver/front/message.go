package front

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/problem"
	"github.com/gorunner/gorunner/tools"
)

// Message is one JSON-RPC message as the front layer reads it: its ID as sent (absent: a
// notification, or a reply when Method is empty too), its method and its params.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Error is a JSON-RPC error object (mcp-go's) as a Go error, so that a handler can fail
// with the code and data its answer carries.
type Error mcp.JSONRPCErrorDetails

// NewError is the JSON-RPC error code, message, data (nil: none).
func NewError(code int, message string, data any) *Error {
	return &Error{Code: code, Message: message, Data: data}
}

func (e *Error) Error() string { return e.Message }

// Answer is the JSON-RPC answer to the request with ID id: err when it is not nil, else
// result.
func Answer(id json.RawMessage, result any, err *Error) mcp.JSONRPCMessage {
	if err != nil {
		return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: requestID(id), Error: mcp.JSONRPCErrorDetails(*err)}
	}
	return mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: requestID(id), Result: result}
}

// requestID is id as mcp-go's RequestId that marshals to the bytes sent (nil: null).
func requestID(id json.RawMessage) mcp.RequestId {
	if len(id) == 0 {
		return mcp.NewRequestId(nil)
	}
	return mcp.NewRequestId(id)
}

// Refusal is the JSON-RPC error of no request ID that refuses a whole message.
func Refusal(code int, message string) mcp.JSONRPCMessage {
	return Answer(nil, nil, NewError(code, message, nil))
}

// IsBatch reports whether raw is a JSON array: a JSON-RPC batch.
func IsBatch(raw []byte) bool {
	rest := bytes.TrimLeft(raw, " \t\r\n")
	return len(rest) > 0 && rest[0] == '['
}

// batchRefusal answers a batch Route reads: MCP allowed batches in protocol version
// 2025-03-26 only, over HTTP, whose transport answers those itself.
var batchRefusal = Refusal(mcp.INVALID_REQUEST, "JSON-RPC batches are not allowed here (MCP allowed them in protocol version 2025-03-26 only, over HTTP); send each message on its own")

// invalidUTF8 is the answer to a message that is not valid UTF-8: a tool error
// VALIDATION_ERROR for a tools/call (the agent can correct itself), else a parse error,
// which refuses the message.
func invalidUTF8(raw []byte) Reply {
	const msg = "the request is not valid UTF-8"
	var m struct {
		ID     any    `json:"id"` // decoded, so that its invalid bytes are not sent back
		Method string `json:"method"`
	}
	id := mcp.NewRequestId(nil)
	if json.Unmarshal(raw, &m) == nil {
		id = mcp.NewRequestId(m.ID)
	}
	if m.ID == nil || m.Method != string(mcp.MethodToolsCall) {
		return Reply{Msg: mcp.NewJSONRPCError(id, mcp.PARSE_ERROR, msg, nil), Refused: true}
	}
	res := tools.Problem{Status: http.StatusBadRequest, Code: problem.CodeValidation, Message: msg + "; send the arguments as UTF-8 text"}.Result()
	return Reply{Msg: mcp.NewJSONRPCResultResponse(id, res)}
}
