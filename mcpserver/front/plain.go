package front

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// TasksExtension is the identifier of the tasks extension of protocol 2026-07-28
// (SEP-2663), which a client declares in the capabilities each request carries in _meta.
const TasksExtension = "io.modelcontextprotocol/tasks"

// metaClientCapabilities is the _meta member of a 2026-07-28 request that declares the
// client's capabilities (SEP-2575).
const metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"

// A plain tools/call — one that asks for no task (2025-11-25) and does not declare the
// tasks extension (2026-07-28) — is neither the task layer's nor a reply to a request the
// server sent. Over stdio, through the task layer and mcp-go's stdio reader, it was
// decoded six times (the task layer's Message and params, mcp-go's validity check, its
// three reply checks and its method check) and handed over twice (the pipe to mcp-go's
// reader, its worker queue) before MCPServer.HandleMessage decoded it once more.
// plainToolsCall tells such a message by one validity check and a scan of its keys; Route
// hands it to the session's Calls at once, or to mcp-go without decoding it.

// plainToolsCall reports whether line is surely a tools/call request that neither the
// task layer (Tasks.Task, Replies) nor mcp-go's stdio reader (its sampling, elicitation
// and roots reply checks) takes, so that mcp-go would queue it for
// MCPServer.HandleMessage as it is. It answers false whenever it cannot be sure; such a
// line takes the general path.
//
// encoding/json, which both the task layer and mcp-go decode with, matches keys without
// regard to case (bytes.EqualFold: "TASK" and "taſk" are "task"), lets the last of
// repeated keys win, and decodes escapes (`"t\u0061sk"`), so the scan compares keys as
// it does and refuses lines with repeated keys or with any backslash. It reads only valid
// JSON, so that its view of where strings, keys and values begin and end is the
// decoder's, and valid UTF-8 (json.Valid lets invalid UTF-8 in strings pass, which the
// task layer answers).
func plainToolsCall(line []byte) bool {
	_, ok := plainCallID(line)
	return ok
}

// plainCallID is plainToolsCall, returning the call's id as it is in line.
func plainCallID(line []byte) (id []byte, ok bool) {
	// The method is matched byte for byte: a line without it is no plain call, and is told
	// so before the validity checks read it all.
	if !bytes.Contains(line, toolsCallMethod) || bytes.IndexByte(line, '\\') >= 0 || !utf8.Valid(line) || !json.Valid(line) {
		return nil, false
	}
	var methods, ids, params int
	ok = eachMember(line, func(key, val []byte) bool {
		switch {
		case bytes.EqualFold(key, []byte("method")):
			methods++
			return bytes.Equal(val, toolsCallMethod)
		case bytes.EqualFold(key, []byte("id")):
			ids++
			id = val
			return val[0] == '"' || val[0] == '-' || ('0' <= val[0] && val[0] <= '9')
		case bytes.EqualFold(key, []byte("params")):
			params++
			return plainCallParams(val)
		case bytes.EqualFold(key, []byte("result")), bytes.EqualFold(key, []byte("error")):
			return false // a reply's members: mcp-go may take the line as one
		}
		return true
	})
	return id, ok && methods == 1 && ids == 1 && params <= 1
}

// toolsCallMethod is the method member's value of a tools/call, as plainToolsCall takes it.
var toolsCallMethod = []byte(`"` + mcp.MethodToolsCall + `"`)

// plainCallParams reports whether a tools/call's params (valid JSON, no backslash) ask
// for no task: no task member (2025-11-25), no tasks extension among the client's
// capabilities in _meta (2026-07-28).
func plainCallParams(val []byte) bool {
	return eachMember(val, func(key, v []byte) bool {
		switch {
		case bytes.EqualFold(key, []byte("task")):
			return false
		case bytes.EqualFold(key, []byte("_meta")):
			return eachMember(v, func(k, caps []byte) bool {
				return !bytes.EqualFold(k, []byte(metaClientCapabilities)) || withoutTasksExtension(caps)
			})
		}
		return true
	})
}

// withoutTasksExtension reports whether caps, the client's capabilities, are an object whose
// extensions, if any, are an object without TasksExtension.
func withoutTasksExtension(caps []byte) bool {
	return eachMember(caps, func(k, ext []byte) bool {
		return !bytes.EqualFold(k, []byte("extensions")) || eachMember(ext, func(name, _ []byte) bool {
			return !bytes.EqualFold(name, []byte(TasksExtension))
		})
	})
}

// eachMember calls fn with the key and the raw value of each member of the JSON object v,
// in order, until fn returns false. v must be valid JSON without a backslash, so that
// keys are their bytes and a string ends at its next quote. It reports false when v is
// not an object or fn returned false.
func eachMember(v []byte, fn func(key, val []byte) bool) bool {
	i := skipSpace(v, 0)
	if i >= len(v) || v[i] != '{' {
		return false
	}
	for i = skipSpace(v, i+1); i < len(v) && v[i] == '"'; {
		end := i + 1 + bytes.IndexByte(v[i+1:], '"')
		key := v[i+1 : end]
		start := skipSpace(v, skipSpace(v, end+1)+1) // past the colon
		i = skipValue(v, start)
		if !fn(key, v[start:i]) {
			return false
		}
		if i = skipSpace(v, i); i < len(v) && v[i] == ',' {
			i = skipSpace(v, i+1)
		}
	}
	return true
}

// skipSpace returns the index of the first byte of v at or after i that is not JSON space.
func skipSpace(v []byte, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the value starting at v[i] (valid JSON, no
// backslash).
func skipValue(v []byte, i int) int {
	switch v[i] {
	case '"':
		return i + 2 + bytes.IndexByte(v[i+1:], '"')
	case '{', '[':
		depth := 0
		for ; i < len(v); i++ {
			switch v[i] {
			case '"':
				i += 1 + bytes.IndexByte(v[i+1:], '"')
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(v) {
		switch v[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}
