#!/usr/bin/env node
// elicitgate test peer: MCP client (TypeScript SDK v1, @modelcontextprotocol/sdk). Legacy era only.
//   --transport http (default) --url http://host:port/mcp   StreamableHTTPClientTransport
//   --transport stdio --command "<shell words>"             StdioClientTransport (spawns it; full env)
//   --transport sse --url http://host:port/sse              SSEClientTransport (deprecated HTTP+SSE)
//   --oauth: the MCP authorization flow (http transport): dynamic registration, PKCE, the user's
//     consent simulated by following the authorization server's redirect, then the token.
// Calls one tool, answers every elicitation with --answer, prints exactly one JSON line:
//   {"ok": true, "result": <first text content, JSON-parsed if JSON>, "elicitations": [...], ...}
//   {"ok": false, "error": {"code": ..., "message": ..., "data": ...}, "elicitations": [...], ...}
// Exit status is 0 unless the script itself crashes. See ../README.md.

import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { SSEClientTransport, SseError } from '@modelcontextprotocol/sdk/client/sse.js';
import { ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { InMemoryOAuthClientProvider } from '@modelcontextprotocol/sdk/examples/client/simpleOAuthClientProvider.js';

const CAPS = {
  form: { elicitation: { form: {} } },
  url: { elicitation: { url: {} } },
  both: { elicitation: { form: {}, url: {} } },
  empty: { elicitation: {} },
  none: {},
};

const { values: opt } = parseArgs({
  options: {
    transport: { type: 'string', default: 'http' },
    url: { type: 'string' },
    command: { type: 'string' },
    tool: { type: 'string' },
    args: { type: 'string' },
    era: { type: 'string', default: 'legacy' },
    caps: { type: 'string', default: 'both' },
    answer: { type: 'string', default: 'accept' },
    content: { type: 'string' },
    timeout: { type: 'string', default: '30' },
    oauth: { type: 'boolean', default: false },
  },
});

const out = { ok: false, elicitations: [], completions: [], notifications: [] };
let printed = false;
function finish() {
  if (printed) return;
  printed = true;
  process.stdout.write(JSON.stringify(out) + '\n');
}
let transport; // set below; bail() stops a spawned stdio server
let authorizationCode = null; // --oauth: the code the authorization server redirected with
let oauthProvider = null;
function bail(message) {
  out.ok = false;
  delete out.result;
  out.error = { code: null, message, data: null, local: true };
  finish();
  if (transport instanceof StdioClientTransport && transport.pid) {
    // Exiting closes our end of its stdin anyway; SIGTERM in case it ignores EOF (no wait: we are timing out).
    try { process.kill(transport.pid, 'SIGTERM'); } catch { /* already gone */ }
  }
  process.exit(0);
}

// Shell-words split with the same rules as Python's shlex.split (POSIX mode, no comments): whitespace
// separates words; '...' is literal; inside "..." a backslash escapes only " and \; outside quotes a
// backslash escapes any next character. No expansion of any kind.
function shellWords(line) {
  const words = [];
  let cur = null;
  let i = 0;
  while (i < line.length) {
    const c = line[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      if (cur !== null) { words.push(cur); cur = null; }
      i += 1;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error('unterminated single quote in --command');
      cur = (cur ?? '') + line.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      cur ??= '';
      i += 1;
      for (;;) {
        if (i >= line.length) throw new Error('unterminated double quote in --command');
        const d = line[i];
        if (d === '"') { i += 1; break; }
        if (d === '\\' && i + 1 < line.length && (line[i + 1] === '"' || line[i + 1] === '\\')) {
          cur += line[i + 1];
          i += 2;
        } else { cur += d; i += 1; }
      }
    } else if (c === '\\') {
      if (i + 1 >= line.length) throw new Error('no escaped character in --command');
      cur = (cur ?? '') + line[i + 1];
      i += 2;
    } else {
      cur = (cur ?? '') + c;
      i += 1;
    }
  }
  if (cur !== null) words.push(cur);
  return words;
}

const USAGE = 'usage: client.mjs [--transport http|stdio|sse] (--url URL | --command "CMD ARGS...") --tool NAME [--args JSON] --era legacy --caps form|url|both|empty|none --answer accept|decline|cancel [--content JSON] [--timeout S]';
if (!['http', 'stdio', 'sse'].includes(opt.transport)) bail(`unknown --transport ${opt.transport}`);
if (!opt.tool) bail(USAGE);
if (opt.transport === 'stdio' ? !opt.command : !opt.url) bail(USAGE);
let commandWords = [];
if (opt.transport === 'stdio') {
  try { commandWords = shellWords(opt.command); } catch (e) { bail(String(e.message)); }
  if (commandWords.length === 0) bail('empty --command');
}
if (opt.era !== 'legacy') bail(`--era ${opt.era}: the TypeScript SDK v1 speaks the legacy era only`);
if (!(opt.caps in CAPS)) bail(`unknown --caps ${opt.caps}`);
if (!['accept', 'decline', 'cancel'].includes(opt.answer)) bail(`unknown --answer ${opt.answer}`);

const timeoutMs = Math.round(Number(opt.timeout) * 1000);
const hard = setTimeout(() => bail(`timeout after ${opt.timeout}s`), timeoutMs);

const caps = CAPS[opt.caps];
const content = opt.content ? JSON.parse(opt.content) : undefined;
const toolArgs = opt.args ? JSON.parse(opt.args) : {};

function declared(mode) {
  const el = caps.elicitation;
  if (!el) return false;
  if (mode === 'url') return 'url' in el;
  return 'form' in el || !('url' in el); // `{}` = form only
}

function errorJson(e) {
  if (e instanceof McpError) {
    const prefix = `MCP error ${e.code}: `;
    const message = e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message;
    return { code: e.code, message, data: e.data ?? null };
  }
  if (e instanceof SseError) {
    return { code: null, message: e.message, data: null, ...(e.code !== undefined ? { httpStatus: e.code } : {}), local: true };
  }
  if (e instanceof StreamableHTTPError) {
    // The SDK does not parse a JSON-RPC error carried in a 4xx body; recover it from the message.
    const m = /Error POSTing to endpoint: (.*)$/s.exec(e.message);
    if (m) {
      try {
        const body = JSON.parse(m[1]);
        if (body && body.error) return { ...body.error, data: body.error.data ?? null, httpStatus: e.code };
      } catch { /* not JSON */ }
    }
    return { code: null, message: e.message, data: null, httpStatus: e.code, local: true };
  }
  return { code: null, message: String(e?.message ?? e), data: null, local: true };
}

const client = new Client(
  { name: 'elicitgate-peer-node-client', version: '1.0.0' },
  { capabilities: caps }, // sent verbatim in initialize
);

// With no elicitation capability the SDK refuses to register a handler; the server then gets -32601.
if (caps.elicitation) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const mode = request.params.mode ?? 'form';
    if (opt.answer === 'accept') {
      return mode === 'url' ? { action: 'accept' } : { action: 'accept', content: content ?? {} };
    }
    return { action: opt.answer };
  });
}

if (opt.transport === 'stdio') {
  transport = new StdioClientTransport({
    command: commandWords[0],
    args: commandWords.slice(1),
    // The SDK passes only HOME/LOGNAME/PATH/SHELL/TERM/USER by default; give the child our environment.
    env: { ...process.env },
    stderr: 'inherit',
  });
} else if (opt.transport === 'sse') {
  transport = new SSEClientTransport(new URL(opt.url));
} else {
  transport = new StreamableHTTPClientTransport(new URL(opt.url), oauthOptions());
}

// The user's consent, simulated: the authorization server redirects to our redirect URI with
// the code at once (the SDK's demo provider does), so the redirect is read, not followed.
function oauthOptions() {
  if (!opt.oauth) return undefined;
  const redirectUrl = 'http://127.0.0.1:9/callback';
  oauthProvider ??= new InMemoryOAuthClientProvider(redirectUrl, {
    client_name: 'elicitgate test peer',
    redirect_uris: [redirectUrl],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
  }, async (url) => {
    const r = await fetch(url, { redirect: 'manual' });
    const location = r.headers.get('location');
    authorizationCode = location ? new URL(location).searchParams.get('code') : null;
    out.authorizationUrl = url.origin;
  });
  return { authProvider: oauthProvider };
}
// The negotiated version: Streamable HTTP / SSE expose setProtocolVersion, stdio does not (the
// Client calls it only if present), so record it here for every transport.
let negotiatedVersion = null;
{
  const setVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => { negotiatedVersion = v; setVersion?.(v); };
}

// Observe the wire: what the server asked (including requests the SDK rejects before our handler
// runs: undeclared modes -> -32602, no capability -> -32601) and what went back.
const pending = new Map(); // server request id -> record
function observeIncoming(msg) {
  if (!msg || typeof msg !== 'object') return;
  if (msg.method === 'elicitation/create' && msg.id !== undefined) {
    const p = msg.params ?? {};
    const mode = p.mode ?? 'form';
    const rec = { mode, message: p.message };
    if (mode === 'url') {
      rec.url = p.url;
      if (p.elicitationId !== undefined) rec.elicitationId = p.elicitationId;
    } else {
      rec.requestedSchema = p.requestedSchema;
    }
    rec.declared = declared(mode);
    out.elicitations.push(rec);
    pending.set(msg.id, rec);
  } else if (msg.method !== undefined && msg.id === undefined) {
    out.notifications.push(msg.method);
    if (msg.method === 'notifications/elicitation/complete') out.completions.push(msg.params?.elicitationId);
  }
}
function observeOutgoing(msg) {
  if (!msg || typeof msg !== 'object' || msg.method !== undefined || msg.id === undefined) return;
  const rec = pending.get(msg.id);
  if (!rec) return;
  pending.delete(msg.id);
  rec.answer = msg.error ? { error: { code: msg.error.code, message: msg.error.message, data: msg.error.data ?? null } } : msg.result?.action;
}

async function main() {
  try {
    await client.connect(transport, { timeout: timeoutMs });
  } catch (e) {
    if (!(opt.oauth && e instanceof UnauthorizedError)) throw e;
    // redirectToAuthorization ran (it may still be reading the redirect); then the token.
    for (let i = 0; i < 100 && !authorizationCode; i++) await new Promise((r) => setTimeout(r, 50));
    if (!authorizationCode) throw new Error('the authorization server gave no code');
    await transport.finishAuth(authorizationCode);
    out.authorized = true;
    transport = new StreamableHTTPClientTransport(new URL(opt.url), oauthOptions());
    const setVersion = transport.setProtocolVersion?.bind(transport);
    transport.setProtocolVersion = (v) => { negotiatedVersion = v; setVersion?.(v); };
    await client.connect(transport, { timeout: timeoutMs });
  }
  const onmessage = transport.onmessage;
  transport.onmessage = (msg, extra) => { observeIncoming(msg); onmessage?.(msg, extra); };
  const send = transport.send.bind(transport);
  transport.send = async (msg, options) => { observeOutgoing(msg); return send(msg, options); };
  out.protocolVersion = negotiatedVersion;

  try {
    const result = await client.callTool({ name: opt.tool, arguments: toolArgs }, undefined, { timeout: timeoutMs });
    const first = (result.content ?? []).find((c) => c.type === 'text');
    let parsed = first ? first.text : null;
    try { if (first) parsed = JSON.parse(first.text); } catch { /* keep text */ }
    out.ok = true;
    out.result = parsed;
    if (result.isError) out.isError = true;
  } catch (e) {
    out.ok = false;
    out.error = errorJson(e);
  }
}

try {
  await main();
} catch (e) {
  out.ok = false;
  out.error = errorJson(e);
}
try { if (opt.transport === 'http' && transport.sessionId) await transport.terminateSession(); } catch { /* best effort */ }
// stdio: StdioClientTransport.close() ends the child's stdin, waits <= 2 s, SIGTERM, <= 2 s, SIGKILL.
try { await client.close(); } catch { /* best effort */ }
clearTimeout(hard);
finish();
process.exit(0);
