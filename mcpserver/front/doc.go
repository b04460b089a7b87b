// Package front is the JSON-RPC layer GoRunner's MCP server puts in front of mcp-go: every
// message a transport reads (one streamable HTTP POST body, one stdio line) goes through
// one Router.Route, which answers what mcp-go cannot and hands everything else to mcp-go
// unchanged, as the bytes it read. The transports only frame bytes; what Route decides
// does not depend on which one read them.
//
// Route takes, in this order:
//
//   - a plain tools/call, one that asks for no task, told by a scan of its keys without
//     decoding it (plainToolsCall): to the session's Calls when it has them, else to
//     mcp-go as it is;
//   - a message that is not valid UTF-8 (mcp-go would decode it with U+FFFD in its
//     strings): a tools/call gets an isError result the agent can act on, anything else a
//     parse error;
//   - a JSON-RPC batch, which MCP allows only in protocol version 2025-03-26 over HTTP
//     (the HTTP transport splits those before Route): Invalid Request (-32600);
//   - a reply to a request the task layer sent the client (elicitation/create on a
//     tasks/result stream), by its ID (Replies);
//   - notifications/cancelled naming a tools/call of the session's Calls;
//   - a task request (Tasks.Task): the 2025-11-25 task methods and task-augmented
//     tools/call, the 2026-07-28 tasks extension;
//   - a tools/call, on the session's Calls when it has them.
//
// Why the layer exists: what mcp-go (v1.2) lacks. Each of these goes when upstream has it.
//
//   - A task store. mcp-go keeps tasks in its process's memory; a GoRunner task is a run,
//     kept in the store, so that any process sharing the store (and the same process after
//     a restart) answers tasks/get, tasks/result, tasks/list and tasks/cancel for it.
//   - Custom methods and result shapes: the tasks extension of 2026-07-28
//     (io.modelcontextprotocol/tasks: tasks/update, a tools/call answered with
//     resultType "task"); a handler's answer is always a CallToolResult in mcp-go.
//   - Requests to the client from outside a tool handler: the questions of a task awaited
//     with tasks/result go on that request's stream, and their replies must be told from
//     the replies to mcp-go's own requests (the IDs Replies mints).
//   - Cancellation in line order over stdio: mcp-go's stdio reader queues a tools/call for
//     a worker, which registers it for cancellation only when it starts, so a
//     notifications/cancelled read meanwhile is lost (Calls registers each call as it is
//     read); and mcp-go keys cancels by the ID's text, so the string "1" cancels the call 1.
//   - Refusals it does not make: invalid UTF-8, batches in protocol versions without them.
//
// Messages are mcp-go's JSON-RPC types (mcp.JSONRPCResponse, mcp.JSONRPCError) with its
// error codes; Error is mcp.JSONRPCErrorDetails as a Go error. A request ID is kept as the
// bytes the client sent, so an answer names its request exactly as the request did.
package front
