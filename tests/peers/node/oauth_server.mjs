#!/usr/bin/env node
// elicitgate test peer: an OAuth-protected MCP server, as the MCP authorization spec describes
// the usual remote server, built from the TypeScript SDK's own pieces: its demo authorization
// server (DemoInMemoryAuthProvider + mcpAuthRouter: RFC 8414 metadata, RFC 7591 registration,
// PKCE, the RFC 8707 `resource` parameter), Protected Resource Metadata (RFC 9728) through
// mcpAuthMetadataRouter, and requireBearerAuth in front of a Streamable HTTP endpoint at /mcp.
//
//   --port 0 --host 127.0.0.1
//   --auth separate (default): the authorization server on its own port (another origin)
//   --auth same: the authorization server's endpoints on the MCP server's own origin
//   --resource URL: the resource this server advertises (default: its own /mcp URL)
//   --issuer URL: the authorization server's public issuer URL (default: where it listens), as
//     an authorization server behind a reverse proxy is configured
//   --jwt: access tokens are ES256 JWTs (`iss`, `aud` = the `resource` asked for, `exp`), their
//     key published at <issuer>/jwks, so a gateway can verify them itself
//
// Tools: `deploy` asks a form (environment: staging | production) and returns the answer;
// `login` asks for a password. Prints `READY <mcp port> <authorization server origin>`.

import { randomUUID, generateKeyPairSync, sign } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import express from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { mcpAuthRouter, mcpAuthMetadataRouter, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { DemoInMemoryAuthProvider } from '@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js';

const { values: opt } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    auth: { type: 'string', default: 'separate' },
    resource: { type: 'string' },
    issuer: { type: 'string' },
    jwt: { type: 'boolean', default: false },
  },
});

const FORMS = {
  deploy: ['Choose the deployment target', {
    type: 'object',
    properties: { env: { type: 'string', title: 'Environment', enum: ['staging', 'production'] } },
    required: ['env'],
  }],
  login: ['Enter your password', {
    type: 'object', properties: { password: { type: 'string', title: 'Password' } }, required: ['password'],
  }],
};

function buildServer() {
  const mcp = new McpServer({ name: 'elicitgate-peer-oauth', version: '1.0.0' });
  for (const [name, [message, requestedSchema]] of Object.entries(FORMS)) {
    mcp.registerTool(name, { description: message }, async (extra) => {
      try {
        const r = await mcp.server.elicitInput({ mode: 'form', message, requestedSchema }, { relatedRequestId: extra.requestId });
        return { content: [{ type: 'text', text: JSON.stringify({ action: r.action, content: r.content ?? null }) }] };
      } catch (e) {
        return { content: [{ type: 'text', text: JSON.stringify({ error: { code: e.code ?? null, message: String(e.message), data: e.data ?? null } }) }] };
      }
    });
  }
  return mcp;
}

const listen = (app) => new Promise((resolve) => {
  const server = createServer(app);
  server.listen(Number(opt.port), opt.host, () => resolve(server));
});

const mcpApp = express();
const mcpHttp = await listen(mcpApp);
const mcpOrigin = `http://${opt.host}:${mcpHttp.address().port}`;
const resource = new URL(opt.resource ?? `${mcpOrigin}/mcp`);

let authApp = mcpApp;
let authOrigin = mcpOrigin;
if (opt.auth === 'separate') {
  authApp = express();
  const authHttp = await new Promise((resolve) => {
    const server = createServer(authApp);
    server.listen(0, opt.host, () => resolve(server));
  });
  authOrigin = `http://${opt.host}:${authHttp.address().port}`;
}
const issuer = (opt.issuer ?? authOrigin).replace(/\/$/, '');
const provider = new DemoInMemoryAuthProvider();
if (opt.jwt) {
  // Tokens the resource server can verify offline: ES256 JWTs for the resource asked for.
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const kid = randomUUID();
  const b64 = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
  const exchange = provider.exchangeAuthorizationCode.bind(provider);
  provider.exchangeAuthorizationCode = async (client, code, verifier, redirectUri, resource) => {
    const tokens = await exchange(client, code, verifier, redirectUri, resource);
    const data = provider.tokens.get(tokens.access_token);
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: `${issuer}/`, sub: 'demo_user', aud: String(data.resource ?? ''), iat: now, exp: now + 3600, client_id: client.client_id };
    const input = `${b64({ alg: 'ES256', typ: 'JWT', kid })}.${b64(claims)}`;
    const signature = sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
    const jwt = `${input}.${signature}`;
    provider.tokens.delete(tokens.access_token);
    provider.tokens.set(jwt, { ...data, token: jwt });
    return { ...tokens, access_token: jwt };
  };
  authApp.get('/jwks', (_req, res) => res.json({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' }] }));
}
authApp.use(mcpAuthRouter({ provider, issuerUrl: new URL(issuer), scopesSupported: ['mcp:tools'] }));
const oauthMetadata = {
  issuer: `${issuer}/`,
  authorization_endpoint: `${issuer}/authorize`,
  token_endpoint: `${issuer}/token`,
  registration_endpoint: `${issuer}/register`,
  response_types_supported: ['code'],
  code_challenge_methods_supported: ['S256'],
  scopes_supported: ['mcp:tools'],
};
mcpApp.use(mcpAuthMetadataRouter({ oauthMetadata, resourceServerUrl: resource, scopesSupported: ['mcp:tools'] }));

const auth = requireBearerAuth({
  verifier: provider,
  resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(resource),
});

const transports = new Map();
mcpApp.all('/mcp', express.json(), auth, async (req, res) => {
  const sid = req.headers['mcp-session-id'];
  if (sid !== undefined) {
    const t = transports.get(sid);
    if (!t) { res.status(404).json({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }); return; }
    await t.handleRequest(req, res, req.body);
    return;
  }
  if (req.method === 'POST' && isInitializeRequest(req.body)) {
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => transports.set(id, transport),
    });
    transport.onclose = () => { if (transport.sessionId) transports.delete(transport.sessionId); };
    await buildServer().connect(transport);
    await transport.handleRequest(req, res, req.body);
    return;
  }
  res.status(400).json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'No valid session' } });
});

process.stdout.write(`READY ${mcpHttp.address().port} ${authOrigin}\n`);
const shutdown = () => process.exit(0);
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
