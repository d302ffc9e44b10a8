#!/usr/bin/env node
// elicitgate test peer: MCP server (TypeScript SDK v1, @modelcontextprotocol/sdk).
// Legacy era only (2025-11-25 and older). Transports:
//   --transport http (default): Streamable HTTP; initialize + Mcp-Session-Id, one McpServer per session,
//     elicitation sent with elicitInput() related to the tools/call, i.e. on that POST's SSE stream.
//   --transport stdio: StdioServerTransport (newline-delimited JSON-RPC on stdin/stdout), one McpServer;
//     exits when stdin reaches EOF. Nothing but protocol is written to stdout.
//   --transport sse: the deprecated 2024-11-05 HTTP+SSE transport (SSEServerTransport): GET --path
//     (default /sse) opens the stream, whose first event is `endpoint` = /messages?sessionId=<uuid>;
//     every server->client message is an `event: message` on that stream; POSTs answer 202.
// HTTP transports print exactly one line `READY <port>` on stdout once listening. See ../README.md.

import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { ElicitResultSchema, McpError, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const { values: opt } = parseArgs({
  options: {
    transport: { type: 'string', default: 'http' },
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    path: { type: 'string' }, // default /mcp (http) or /sse (sse)
    era: { type: 'string', default: 'legacy' },
    'ignore-caps': { type: 'boolean', default: false },
    'sse-notify': { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
  },
});
if (opt.era !== 'legacy') {
  console.error(`--era ${opt.era}: the TypeScript SDK v1 speaks the legacy era only`);
  process.exit(2);
}
if (!['http', 'stdio', 'sse'].includes(opt.transport)) {
  console.error(`--transport ${opt.transport}: expected http, stdio or sse`);
  process.exit(2);
}
opt.path ??= opt.transport === 'sse' ? '/sse' : '/mcp';
const SSE_MESSAGE_PATH = '/messages'; // endpoint event data: /messages?sessionId=<uuid>
const debug = (...a) => { if (opt.verbose) console.error('[peer-node-server]', ...a); };

const FORMS = {
  deploy: ['Choose the deployment target', {
    type: 'object',
    properties: {
      env: { type: 'string', title: 'Environment', enum: ['staging', 'production'] },
      confirm: { type: 'boolean', title: 'Confirm' },
    },
    required: ['env'],
  }],
  github_user: ['Enter your GitHub username', {
    type: 'object', properties: { username: { type: 'string', title: 'GitHub username' } }, required: ['username'],
  }],
  login: ['Enter your password', {
    type: 'object', properties: { password: { type: 'string', title: 'Password' } }, required: ['password'],
  }],
  api_key: ['Enter your API key', {
    type: 'object', properties: { api_key: { type: 'string', title: 'API key' } }, required: ['api_key'],
  }],
};
// tool -> [message, url, send notifications/elicitation/complete after accept]
const URLS = {
  connect_http: ['Connect your account', 'http://auth.example.com/connect', false],
  connect_pii: ['Connect your account', 'https://auth.example.com/connect?email=alice%40example.com', false],
  connect_ok: ['Connect your account', 'https://auth.example.com/connect?flow=abc', true],
};

const text = (obj) => ({ content: [{ type: 'text', text: typeof obj === 'string' ? obj : JSON.stringify(obj) }] });

function errorJson(e) {
  if (e instanceof McpError) {
    // McpError.message is "MCP error <code>: <message>"; report the wire message.
    const prefix = `MCP error ${e.code}: `;
    const message = e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message;
    return { code: e.code, message, data: e.data ?? null };
  }
  return { code: null, message: String(e?.message ?? e), data: null, local: true };
}

function buildServer() {
  const mcp = new McpServer(
    { name: 'elicitgate-peer-node', version: '1.0.0' },
    { capabilities: { logging: {} } },
  );

  // Ask once; `raw` sends `params` verbatim with no SDK capability/shape checks.
  async function ask(tool, params, extra, { raw = false } = {}) {
    if (opt['sse-notify']) {
      await extra.sendNotification({
        method: 'notifications/message', params: { level: 'info', data: `${tool}: asking the user` },
      });
    }
    try {
      let result;
      if (raw || opt['ignore-caps']) {
        // Request related to this tools/call => rides its POST SSE stream; no capability check.
        result = await extra.sendRequest({ method: 'elicitation/create', params }, ElicitResultSchema);
      } else {
        // SDK path: refuses locally (plain Error) if the client did not declare the mode,
        // validates accepted form content against requestedSchema (McpError -32602 on mismatch).
        result = await mcp.server.elicitInput(params, { relatedRequestId: extra.requestId });
      }
      return { ok: true, body: { action: result.action, content: result.content ?? null } };
    } catch (e) {
      debug('elicitation failed', e);
      return { ok: false, body: { error: errorJson(e) } };
    }
  }

  for (const [name, [message, requestedSchema]] of Object.entries(FORMS)) {
    mcp.registerTool(name, { description: `Form elicitation fixture: ${message}` }, async (extra) => {
      const r = await ask(name, { mode: 'form', message, requestedSchema }, extra);
      return text(r.body);
    });
  }

  for (const [name, [message, url, complete]] of Object.entries(URLS)) {
    mcp.registerTool(name, { description: `URL elicitation fixture: ${url}` }, async (extra) => {
      const elicitationId = `${name}-${randomUUID().slice(0, 12)}`;
      const r = await ask(name, { mode: 'url', message, url, elicitationId }, extra);
      const body = { ...r.body, elicitationId };
      if (r.ok && complete && r.body.action === 'accept') {
        try {
          // Related to the tools/call => same POST SSE stream, before the tool result.
          await mcp.server.createElicitationCompletionNotifier(elicitationId, { relatedRequestId: extra.requestId })();
          body.completeSent = true;
        } catch (e) {
          body.completeError = errorJson(e);
        }
      }
      return text(body);
    });
  }

  mcp.registerTool('echo', {
    description: 'No elicitation; returns `text`.',
    inputSchema: { text: z.string().optional() },
  }, async ({ text: t }) => text(t ?? ''));

  mcp.registerTool('elicit_raw', {
    description: 'Sends `params` verbatim as elicitation/create params.',
    inputSchema: { params: z.record(z.string(), z.unknown()) },
  }, async ({ params }, extra) => text((await ask('elicit_raw', params, extra, { raw: true })).body));

  return mcp;
}

// ---------------------------------------------------------------------------- stdio

if (opt.transport === 'stdio') {
  const server = buildServer();
  const transport = new StdioServerTransport();
  let closing = false;
  const shutdown = () => {
    if (closing) return;
    closing = true;
    debug('stdin closed / signal: shutting down');
    server.close().catch(() => {}).finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 500).unref();
  };
  // The SDK's StdioServerTransport does not react to stdin EOF; the spec's shutdown is "client closes
  // the server's stdin", so exit then (stdout writes to a pipe are synchronous on Linux).
  process.stdin.on('end', shutdown);
  process.stdin.on('close', shutdown);
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  transport.onerror = (e) => debug('stdio transport error', e);
  await server.connect(transport);
  debug('serving on stdio');
}

// ---------------------------------------------------------------------------- Streamable HTTP + sessions

const transports = new Map(); // sessionId -> transport (Streamable HTTP or SSE)

function jsonError(res, status, code, message) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }));
}

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const raw = Buffer.concat(chunks).toString('utf8');
  return raw.length ? JSON.parse(raw) : undefined;
}

async function handleStreamableHttp(req, res) {
  try {
    const url = new URL(req.url, 'http://localhost');
    if (url.pathname !== opt.path) { res.writeHead(404).end(); return; }
    const sid = req.headers['mcp-session-id'];
    let body;
    if (req.method === 'POST') {
      try { body = await readBody(req); } catch { jsonError(res, 400, -32700, 'Parse error'); return; }
    }
    if (sid !== undefined) {
      const t = transports.get(sid);
      if (!t) { jsonError(res, 404, -32001, 'Session not found'); return; }
      await t.handleRequest(req, res, body);
      return;
    }
    if (req.method === 'POST' && body && !Array.isArray(body) && isInitializeRequest(body)) {
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => { transports.set(id, transport); debug('session', id); },
        onsessionclosed: (id) => { transports.delete(id); },
      });
      transport.onclose = () => { if (transport.sessionId) transports.delete(transport.sessionId); };
      await buildServer().connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    jsonError(res, 400, -32000, 'Bad Request: No valid session ID provided');
  } catch (e) {
    debug('http handler error', e);
    if (!res.headersSent) jsonError(res, 500, -32603, 'Internal error');
  }
}

// ---------------------------------------------------------------------------- HTTP+SSE (2024-11-05)

async function handleSse(req, res) {
  try {
    const url = new URL(req.url, 'http://localhost');
    if (req.method === 'GET' && url.pathname === opt.path) {
      // One McpServer per GET stream; the transport writes `event: endpoint` on start().
      const transport = new SSEServerTransport(SSE_MESSAGE_PATH, res);
      transports.set(transport.sessionId, transport);
      transport.onclose = () => { transports.delete(transport.sessionId); debug('sse session closed', transport.sessionId); };
      debug('sse session', transport.sessionId);
      await buildServer().connect(transport);
      return;
    }
    if (url.pathname === SSE_MESSAGE_PATH) {
      if (req.method !== 'POST') { res.writeHead(405, { allow: 'POST' }).end(); return; }
      const sid = url.searchParams.get('sessionId');
      const t = sid ? transports.get(sid) : undefined;
      if (!t) { res.writeHead(404, { 'content-type': 'text/plain' }).end('Session not found'); return; }
      await t.handlePostMessage(req, res); // 202 Accepted; any reply goes out on the GET stream
      return;
    }
    res.writeHead(404).end();
  } catch (e) {
    debug('sse handler error', e);
    if (!res.headersSent) res.writeHead(500).end('Internal error');
  }
}

if (opt.transport !== 'stdio') {
  const httpServer = createServer(opt.transport === 'sse' ? handleSse : handleStreamableHttp);

  httpServer.listen(Number(opt.port), opt.host, () => {
    process.stdout.write(`READY ${httpServer.address().port}\n`);
  });

  const shutdown = () => {
    for (const t of transports.values()) t.close().catch(() => {});
    httpServer.close();
    setTimeout(() => process.exit(0), 200).unref();
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}
