// The MCP TypeScript SDK's experimental tasks API against GoRunner, over streamable HTTP
// (GORUNNER_URL, bearer GORUNNER_TOKEN) and over stdio (GORUNNER_BIN mcp --data-dir
// GORUNNER_DATA, as GORUNNER_TOKEN): greet called as a task (tools/call with task, tasks/get,
// tasks/result), approval called as a task whose question arrives as elicitation/create on
// the tasks/result stream, long-report called as a task then listed and cancelled. Prints
// {"http": {...}, "stdio": {...}}. Run by cmd/gorunner's TestTasksTypeScriptSDK.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const token = process.env.GORUNNER_TOKEN;

// stream collects what callToolStream yields: the message types in order and the result.
async function stream(client, name, args) {
  const seen = [];
  let result, error;
  for await (const m of client.experimental.tasks.callToolStream({ name, arguments: args })) {
    seen.push(m.type === 'taskStatus' ? `taskStatus:${m.task.status}` : m.type);
    if (m.type === 'taskCreated') seen.taskId = m.task.taskId;
    if (m.type === 'result') result = m.result;
    if (m.type === 'error') error = String(m.error);
  }
  if (error) throw new Error(`${name}: ${error} after ${seen.join(', ')}`);
  return { types: [...new Set(seen)], taskId: seen.taskId, status: result.structuredContent.status, output: result.structuredContent.output };
}

// session drives one connected client through the task methods.
async function session(transport, id) {
  const asked = [];
  const client = new Client({ name: 'gorunner-ts-tasks', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push({ message: req.params.message, relatedTask: req.params._meta?.['io.modelcontextprotocol/related-task']?.taskId });
    return { action: 'accept', content: { approved: true, by: 'Ada' } };
  });
  await client.connect(transport);
  const { tools } = await client.listTools();
  const taskSupport = Object.fromEntries(tools.filter((t) => t.execution).map((t) => [t.name, t.execution.taskSupport]));

  const greet = await stream(client, 'greet', { name: 'Ada' });
  const greetResult = await client.experimental.tasks.getTaskResult(greet.taskId, CallToolResultSchema);
  const approval = await stream(client, 'approval', { requestId: `ts-${id}` });

  const created = await client.request({ method: 'tools/call', params: { name: 'long-report', arguments: { topic: id } } },
    CreateTaskResultSchema, { task: { ttl: 60000 } });
  const longId = created.task.taskId;
  const running = await client.experimental.tasks.getTask(longId);
  const listed = await client.experimental.tasks.listTasks();
  await client.experimental.tasks.cancelTask(longId);
  const cancelled = await client.experimental.tasks.getTask(longId);
  await client.close();
  return {
    taskSupport, greet, greetResult: greetResult.structuredContent, approval, asked,
    long: { status: running.status, statusMessage: running.statusMessage, listed: listed.tasks.some((t) => t.taskId === longId), cancelled: cancelled.status },
  };
}

const http = await session(new StreamableHTTPClientTransport(new URL('/mcp', process.env.GORUNNER_URL),
  { requestInit: { headers: { Authorization: `Bearer ${token}` } } }), 'http');
const stdio = await session(new StdioClientTransport({
  command: process.env.GORUNNER_BIN, args: ['mcp', '--data-dir', process.env.GORUNNER_DATA],
  env: { ...process.env, GORUNNER_LOG_LEVEL: 'warn' }, stderr: 'inherit',
}), 'stdio');
console.log(JSON.stringify({ http, stdio }));
