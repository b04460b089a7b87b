// The MCP TypeScript SDK's OAuth client against `gorunner serve --public-url`: discovery
// from the 401, dynamic registration, PKCE, the authorize page (approved here by posting
// its form with GORUNNER_SIGNIN, as a person would), the code exchange, then tools/list
// with the access token. Prints {"tools": [...], "scope": "..."}. Run by interop/cmd/gorunner's
// TestOAuthTypeScriptSDK.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const base = process.env.GORUNNER_URL;
const credential = process.env.GORUNNER_SIGNIN;
const redirectUrl = 'http://127.0.0.1:1/callback';
const state = 'ts-sdk-state';

const entities = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const unescapeHTML = (s) =>
  s.replace(/&(#\d+|[a-z]+);/g, (_, e) => (e[0] === '#' ? String.fromCodePoint(Number(e.slice(1))) : entities[e]));

// approve is the person at the authorize page: every scope asked, signed in with the credential.
async function approve(authorizationUrl) {
  const page = await fetch(authorizationUrl, { redirect: 'manual' });
  const html = await page.text();
  if (page.status !== 200) throw new Error(`authorize page answered ${page.status}: ${html}`);
  const cookie = page.headers.get('set-cookie').split(';')[0];
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) form.append(m[1], unescapeHTML(m[2]));
  for (const m of html.matchAll(/name="grant_scope" value="([^"]+)"/g)) form.append('grant_scope', unescapeHTML(m[1]));
  form.append('credential', credential);
  form.append('action', 'approve');
  const res = await fetch(new URL('/oauth/authorize', base), { method: 'POST', body: form, headers: { cookie }, redirect: 'manual' });
  if (res.status !== 303) throw new Error(`approving answered ${res.status}: ${await res.text()}`);
  const back = new URL(res.headers.get('location'));
  if (back.searchParams.get('state') !== state) throw new Error(`state did not round-trip: ${back}`);
  return back.searchParams.get('code');
}

let info, tokens, verifier, code;
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return { client_name: 'TypeScript SDK', redirect_uris: [redirectUrl], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  },
  state() { return state; },
  clientInformation() { return info; },
  saveClientInformation(i) { info = i; },
  tokens() { return tokens; },
  saveTokens(t) { tokens = t; },
  saveCodeVerifier(v) { verifier = v; },
  codeVerifier() { return verifier; },
  async redirectToAuthorization(url) { code = await approve(url); },
};

const mcpUrl = new URL('/mcp', base);
const client = new Client({ name: 'gorunner-ts-oauth', version: '1.0.0' });
try {
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
} catch (e) {
  if (!(e instanceof UnauthorizedError) || !code) throw e;
  const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
  await transport.finishAuth(code);
  await client.connect(transport);
}
const { tools } = await client.listTools();
console.log(JSON.stringify({ tools: tools.map((t) => t.name), scope: tokens.scope }));
await client.close();
