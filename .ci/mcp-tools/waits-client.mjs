// The MCP TypeScript SDK's client, without elicitation, against GoRunner over streamable
// HTTP (GORUNNER_URL, bearer GORUNNER_TOKEN), around waiting runs (issue #28): a 2-second
// sleep workflow (doze, published by the test) answered in one call; the approval example's
// question in waitingOn.hook, a typo refused by gorunner_resume_hook, the approval delivered,
// a second one queued and kept on the run (resources/read); then, as JSON-RPC the SDK does
// not speak yet (protocol 2026-07-28), a tasks-extension client without elicitation polling
// tasks/get. Prints what it saw as JSON. Run by cmd/gorunner's TestWaitsTypeScriptSDK.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const token = process.env.GORUNNER_TOKEN;
const base = process.env.GORUNNER_URL;

const client = new Client({ name: 'gorunner-ts-waits', version: '1.0.0' }, { capabilities: {} });
await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', base),
  { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));

const call = async (name, args) => {
  const res = await client.callTool({ name, arguments: args });
  return { isError: Boolean(res.isError), content: res.structuredContent, text: res.content.find((c) => c.type === 'text')?.text };
};

const doze = await call('doze', {});
const approval = await call('approval', { requestId: 'ts-waits' });
const hook = approval.content.waitingOn?.hook;
const typo = await call('gorunner_resume_hook', { token: hook.token, payload: { approve: 'yes' } });
const first = await call('gorunner_resume_hook', { token: hook.token, payload: { approved: true, by: 'Ada' } });
const second = await call('gorunner_resume_hook', { token: hook.token, payload: { approved: false } });
const done = await call('gorunner_get_run', { runId: approval.content.runId, waitSeconds: 30 });
const read = await client.readResource({ uri: `gorunner://runs/${approval.content.runId}` });
const run = JSON.parse(read.contents[0].text);
await client.close();

// A 2026-07-28 request declaring the tasks extension and no elicitation.
async function modern(id, method, name, params) {
  const res = await fetch(new URL('/mcp', base), {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'Mcp-Protocol-Version': '2026-07-28', 'Mcp-Method': method, 'Mcp-Name': name },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'gorunner-ts-waits', version: '1.0.0' },
      'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    } } }),
  });
  const text = await res.text();
  const json = text.startsWith('{') ? text : text.split('\n').find((l) => l.startsWith('data: ')).slice(6);
  return JSON.parse(json).result;
}
const created = await modern(1, 'tools/call', 'approval', { name: 'approval', arguments: { requestId: 'ts-task' } });
const polled = await modern(2, 'tasks/get', created.taskId, { taskId: created.taskId });

console.log(JSON.stringify({
  doze: doze.content, hook, typo, first: first.content, second: second.content, done: done.content,
  undelivered: run.undeliveredPayloads,
  task: { created: { status: created.status, statusMessage: created.statusMessage, inputRequests: created.inputRequests },
    polled: { status: polled.status, statusMessage: polled.statusMessage, inputRequests: polled.inputRequests } },
}));
