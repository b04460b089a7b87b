// The host page of the run card's browser test (mcpserver/runcard/browser_test.go): a host
// as the MCP Apps spec draws one. It connects the MCP TypeScript SDK client to GoRunner's
// /mcp (declaring the io.modelcontextprotocol/ui extension), reads the card the tool names
// in _meta.ui.resourceUri, renders it in a sandboxed iframe under the CSP its _meta.ui.csp
// gives, and connects ext-apps' AppBridge to it; then it calls the tool, as a model would,
// and hands the result to the card. The card's own calls go through the bridge to the same
// client. window.host records what the test reads: the tools called, and errors.
//
// With ?script=<json> the page is a host without a server instead: it hands the card
// script.result and answers each tools/call of a tool with the next of script.replies[tool]
// (the last one again when they run out), and resources/read with script.run when there is
// one, for states the server cannot be made to show.
import { AppBridge, PostMessageTransport, getToolUiResourceUri } from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const params = new URLSearchParams(location.search);
const host = (window.host = { calls: [], errors: [], ready: false });

// cspOf is the policy the spec has a host build from the resource's _meta.ui.csp.
function cspOf(csp = {}) {
  const res = (csp.resourceDomains ?? []).join(" ");
  return [
    "default-src 'none'", `script-src 'unsafe-inline' ${res}`, `style-src 'unsafe-inline' ${res}`,
    `connect-src ${(csp.connectDomains ?? []).join(" ") || "'none'"}`, `img-src data: ${res}`, `font-src ${res || "'none'"}`,
    `frame-src ${(csp.frameDomains ?? []).join(" ") || "'none'"}`, "object-src 'none'",
  ].join("; ");
}

// show renders the card in the iframe under its CSP and connects bridge to it; then, once
// the card has initialized, toolResult() is handed to it.
async function show(bridge, card, args, toolResult) {
  const iframe = document.getElementById("card");
  bridge.onsizechange = ({ height }) => { if (height != null) iframe.style.height = height + "px"; };
  bridge.oninitialized = async () => {
    host.ready = true;
    await bridge.sendToolInput({ arguments: args });
    await bridge.sendToolResult(await toolResult());
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  const policy = `<meta http-equiv="Content-Security-Policy" content="${cspOf(card._meta?.ui?.csp)}">`;
  iframe.srcdoc = card.text.replace("<head>", "<head>" + policy);
}

function hostContext(tool) {
  const theme = params.get("theme") || "light";
  document.documentElement.dataset.theme = theme;
  return { theme, toolInfo: { tool }, displayMode: "inline", platform: "web" };
}

const hostInfo = { name: "gorunner-card-test-host", version: "1.0.0" };

async function served() {
  const client = new Client(hostInfo, {
    capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } },
  });
  const request = client.request.bind(client);
  client.request = (req, schema, opts) => {
    if (req.method === "tools/call") host.calls.push({ name: req.params.name, arguments: req.params.arguments });
    return request(req, schema, opts);
  };
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.origin), {
    requestInit: { headers: { Authorization: "Bearer " + params.get("token") } },
  }));
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === params.get("tool"));
  const uri = getToolUiResourceUri(tool);
  const { contents } = await client.readResource({ uri });
  host.resource = { uri, mimeType: contents[0].mimeType, meta: contents[0]._meta };
  const bridge = new AppBridge(client, hostInfo, { serverTools: {}, serverResources: {}, logging: {} },
    { hostContext: hostContext(tool) });
  const args = JSON.parse(params.get("args") || "{}");
  await show(bridge, contents[0], args, () => client.callTool({ name: tool.name, arguments: args }));
}

async function scripted(script) {
  const caps = script.run ? { serverTools: {}, serverResources: {} } : { serverTools: {} };
  const bridge = new AppBridge(null, hostInfo, caps, { hostContext: hostContext({ name: "ship-order", title: "Ship an order", inputSchema: { type: "object" } }) });
  bridge.onreadresource = async ({ uri }) => ({ contents: [{ uri, mimeType: "application/json", text: JSON.stringify(script.run) }] });
  bridge.oncalltool = async ({ name, arguments: args }) => {
    host.calls.push({ name, arguments: args });
    const replies = script.replies[name] ?? [];
    return replies.length > 1 ? replies.shift() : replies[0];
  };
  const card = await (await fetch("card.html")).text();
  await show(bridge, { text: card, _meta: { ui: { csp: {} } } }, {}, async () => script.result);
}

const script = params.get("script");
(script ? scripted(JSON.parse(script)) : served()).catch((err) => host.errors.push(String(err?.stack || err)));
