package front

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// plainLines are lines plainToolsCall must tell apart: true for a plain tools/call, false
// for everything the task layer or mcp-go's stdio reader may take otherwise, and for what
// the scan cannot be sure of.
var plainLines = []struct {
	name  string
	line  string
	plain bool
}{
	{"go-sdk call", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"bench","arguments":{"n":1}}}` + "\n", true},
	{"string id", `{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"bench"}}`, true},
	{"negative id", `{"jsonrpc":"2.0","id":-1,"method":"tools/call","params":{"name":"bench"}}`, true},
	{"spaces everywhere", " {\t\"jsonrpc\" : \"2.0\" ,\r\n \"method\" : \"tools/call\" , \"id\" : 7 , \"params\" : { \"name\" : \"bench\" , \"arguments\" : { } } }\n", true},
	{"no params", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, true},
	{"progress token", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b","_meta":{"progressToken":"p"}}}`, true},
	{"task key only inside arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b","arguments":{"task":{"ttl":1}}}}`, true},
	{"task key inside a string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b","arguments":{"s":"\",\"task\":{}"}}}`, false}, // escaped quotes: a backslash
	{"task in a string value", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b","arguments":{"s":"}, \"task\": {"}}}`, false},
	{"quoted braces in a value", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b","arguments":{"s":"}}],{[","task":1}}}`, true},
	{"quoted key text, task after", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"} \"task","task":{}}}`, false},
	{"task as a value", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"task","arguments":{"s":"task","t":["task",{"task":1}]}}}`, true},
	{"method in a string", `{"jsonrpc":"2.0","id":1,"result":{"method":"tools/call"}}`, false},

	{"task", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b","task":{"ttl":1000}}}`, false},
	{"task null", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b","task":null}}`, false},
	{"TASK", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b","TASK":{}}}`, false},
	{"long s", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b","taſk":{}}}`, false},
	{"Kelvin sign", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"b\",\"tas\u212a\":{}}}", false},
	{"escaped task", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b","t\u0061sk":{}}}`, false},
	{"escaped method", `{"jsonrpc":"2.0","id":1,"method":"tasks\/get","params":{"taskId":"x"}}`, false},
	{"modern", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"bench","arguments":{"n":1}}}`, true},
	{"modern, other extensions", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"x/y":{}}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"b"}}`, true},
	{"modern, tasks extension", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"b"}}`, false},
	{"modern, tasks extension, other case", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_META":{"IO.modelcontextprotocol/clientcapabilities":{"Extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"b"}}`, false},
	{"modern, tasks extension, second capabilities", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/CLIENTCAPABILITIES":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},"name":"b"}}`, false},
	{"modern, tasks extension, second _meta", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"b","_Meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`, false},
	{"modern, extensions not an object", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":null},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"b"}}`, false},
	{"modern, capabilities not an object", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":[],"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"b"}}`, false},
	{"modern, escaped extension", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol\/tasks":{}}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"b"}}`, false},
	{"modern, requestState", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"b","requestState":"s"}}`, true},
	{"meta not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b","_meta":null}}`, false},
	{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, false},
	{"two params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b"},"Params":{"name":"b","task":{}}}`, false},
	{"two methods", `{"jsonrpc":"2.0","id":1,"method":"tools/call","METHOD":"tools/call"}`, false},
	{"last method wins", `{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tasks/get"}`, false},
	{"Method", `{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`, true},
	{"other method", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x"}}`, false},
	{"tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, false},
	{"notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"b"}}`, false},
	{"null id", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"b"}}`, false},
	{"two ids", `{"jsonrpc":"2.0","id":1,"ID":2,"method":"tools/call"}`, false},
	{"a result beside", `{"jsonrpc":"2.0","id":1,"method":"tools/call","result":{}}`, false},
	{"an error beside", `{"jsonrpc":"2.0","id":1,"method":"tools/call","Error":{"code":1,"message":"x"}}`, false},
	{"reply", `{"jsonrpc":"2.0","id":"gorunner-1","result":{"action":"accept"}}`, false},
	{"invalid JSON", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b"}`, false},
	{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"tools/call"} {"task":1}`, false},
	{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\"}}", false},
	{"array", `[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]`, false},
	{"string", `"tools/call"`, false},
	{"empty", ``, false},
	{"empty object", `{}`, false},
}

// TestPlainToolsCall: the pre-filter of the stdio transport takes exactly the plain
// tools/calls, hostile lines included, and whatever it takes the task layer and mcp-go's
// reader would have handed to the tool handler (routedAsPlainCall).
func TestPlainToolsCall(t *testing.T) {
	for _, tc := range plainLines {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.plain, plainToolsCall([]byte(tc.line)))
			if tc.plain {
				require.True(t, routedAsPlainCall([]byte(tc.line)), "the decoders disagree")
			}
		})
	}
}

// FuzzPlainToolsCall: a line plainToolsCall takes is one the full decoding would have
// routed to mcp-go's tool handler unchanged.
func FuzzPlainToolsCall(f *testing.F) {
	for _, tc := range plainLines {
		f.Add([]byte(tc.line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if plainToolsCall(line) && !routedAsPlainCall(line) {
			t.Fatalf("took %q", line)
		}
	})
}

// routedAsPlainCall decodes line as the general path does: the task layer
// (Route, the task layer's Tasks.Task) leaves it to mcp-go, whose stdio reader finds no reply to
// a request of its own in it and queues it as a tools/call for MCPServer.HandleMessage.
// A 2026-07-28 call declaring the tasks extension counts as not plain: the task layer may
// take it, by its tool.
func routedAsPlainCall(line []byte) bool {
	if !utf8.Valid(line) {
		return false
	}
	var msg Message
	if json.Unmarshal(line, &msg) != nil || msg.Method != string(mcp.MethodToolsCall) || len(msg.ID) == 0 {
		return false
	}
	var call struct {
		Task json.RawMessage `json:"task"`
		Meta struct {
			ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
			Capabilities    *struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	}
	if json.Unmarshal(msg.Params, &call) == nil {
		modern := mcp.IsModernProtocol(call.Meta.ProtocolVersion)
		extension := false
		if call.Meta.Capabilities != nil {
			_, extension = call.Meta.Capabilities.Extensions[TasksExtension]
		}
		if (modern && extension) || (!modern && len(call.Task) > 0 && string(call.Task) != "null") {
			return false
		}
	}
	var reply struct {
		ID     json.Number     `json:"id"`
		Result json.RawMessage `json:"result,omitempty"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error,omitempty"`
	}
	if json.Unmarshal(line, &reply) == nil && (reply.Result != nil || reply.Error != nil) {
		return false
	}
	var base struct {
		Method string `json:"method"`
		ID     any    `json:"id,omitempty"`
	}
	return json.Unmarshal(line, &base) == nil && base.Method == string(mcp.MethodToolsCall) && base.ID != nil
}

// BenchmarkPlainToolsCallOtherLine: what the pre-filter costs a line that is no tools/call
// (here a 64 KiB elicitation reply).
func BenchmarkPlainToolsCallOtherLine(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":"gorunner-1","result":{"action":"accept","content":{"note":"` + strings.Repeat("x", 64<<10) + `"}}}`)
	for b.Loop() {
		if plainToolsCall(line) {
			b.Fatal("taken")
		}
	}
}

// TestPlainToolsCallWorstLines: deep nesting, a line of 1 MiB (the stdio limit), and keys that
// only Unicode case folding beyond encoding/json's would match are told as the decoders
// tell them.
func TestPlainToolsCallWorstLines(t *testing.T) {
	call := func(args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b","arguments":` + args + `}}`
	}
	nested := func(depth int) string {
		return call(`{"a":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`)
	}
	big := call(`{"s":"` + strings.Repeat("x", 1<<20-100) + `"}`)
	for _, tc := range []struct {
		name  string
		line  string
		plain bool
	}{
		{"nested 5000 deep", nested(5000), true},
		{"nested past the decoder's depth", nested(20000), false},
		{"1 MiB line", big, true},
		{"1 MiB line, task at its end", big[:len(big)-2] + `,"task":{}}}`, false},
		{"dotless i id", `{"jsonrpc":"2.0","ıd":1,"method":"tools/call"}`, false},
		{"dotted I id beside id", `{"jsonrpc":"2.0","id":1,"İD":{},"method":"tools/call"}`, true},
		{"dotless i in the capabilities", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"ıo.modelcontextprotocol/clıentCapabılıtıes":{"extensıons":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"b"}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.plain, plainToolsCall([]byte(tc.line)))
			require.Equal(t, tc.plain, routedAsPlainCall([]byte(tc.line)), "the decoders agree")
		})
	}
}
