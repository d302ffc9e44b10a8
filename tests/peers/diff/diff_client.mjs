#!/usr/bin/env node
// elicitgate differential test: the official TypeScript MCP SDK (@modelcontextprotocol/sdk 1.x,
// installed in ../node/node_modules) as an oracle.
//
//   diff_client.mjs --url http://127.0.0.1:PORT/mcp --cases FILE [--concurrency 8] [--timeout 5]
//   diff_client.mjs --command "SERVER COMMAND" --cases FILE [--accept-colour] ...   (stdio)
//
// With --command, every case spawns that command (split on spaces) with the SDK's
// `StdioClientTransport` instead of connecting to --url. With --accept-colour, a form asking only
// for `colour` is answered `accept {"colour": "blue"}` (the others are declined).
//
// FILE holds one JSON object per line (hostile_upstream.py --list). Each legacy case runs in a
// fresh session: `Client` + `StreamableHTTPClientTransport`, capabilities
// {elicitation: {form: {}, url: {}}}, `tools/call <case name>`. The ElicitRequestSchema handler
// records what the user would be shown and answers `decline`; a -32042 error is surfaced the way
// the SDK hands it to applications (`UrlElicitationRequiredError.elicitations`). Modern
// (2026-07-28) cases are reported as `"call": "n/a"`: SDK v1 speaks the legacy era only.
//
// One JSON line per case on stdout (same shape as diff_client.py):
//   {"case", "client": "node", "surfaced": [{"via", "mode", "message", "url", "props"}],
//    "call": "ok"|"error"|"timeout"|"n/a", "detail", "answer", "ms"}
// A case ends at --timeout seconds or 1.5 s after an elicitation was surfaced.

import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const sdkRoot = process.env.ELICITGATE_TS_SDK ?? join(here, '..', 'node', 'node_modules', '@modelcontextprotocol', 'sdk');
const sdk = (p) => import(pathToFileURL(join(sdkRoot, 'dist', 'esm', p)).href);
const { Client } = await sdk('client/index.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
const { StdioClientTransport } = await sdk('client/stdio.js');
const { ElicitRequestSchema, UrlElicitationRequiredError, McpError } = await sdk('types.js');

const AFTER_SURFACED_MS = 1500;

const { values: opt } = parseArgs({
  options: {
    url: { type: 'string' },
    command: { type: 'string' },
    'accept-colour': { type: 'boolean', default: false },
    cases: { type: 'string' },
    concurrency: { type: 'string', default: '8' },
    timeout: { type: 'string', default: '5' },
  },
});
if (!(opt.url || opt.command) || !opt.cases) {
  process.stderr.write('usage: diff_client.mjs (--url URL | --command CMD) --cases FILE [--concurrency N] [--timeout S] [--accept-colour]\n');
  process.exit(2);
}
const timeoutMs = Math.round(Number(opt.timeout) * 1000);
const cases = readFileSync(opt.cases, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));

function short(s, n = 160) {
  s = String(s).split(/\s+/).join(' ');
  return s.length <= n ? s : s.slice(0, n - 1) + '…';
}

function describe(params, via) {
  const p = params ?? {};
  // A -32042 error lists URL-mode elicitations by definition; a legacy request without `mode` is a form.
  const rec = { via, mode: p.mode ?? (via === 'callback' ? 'form' : 'url'), message: p.message };
  if (p.url !== undefined) rec.url = p.url;
  if (p.requestedSchema !== undefined) rec.props = Object.keys(p.requestedSchema?.properties ?? {}).sort();
  return rec;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms).unref());

async function runCase(c) {
  const rec = { case: c.name, client: 'node', surfaced: [], call: 'timeout', detail: '', answer: null };
  if (c.era !== 'legacy') {
    rec.call = 'n/a';
    rec.detail = 'TypeScript SDK v1 speaks the legacy era only';
    return rec;
  }
  const started = Date.now();
  const client = new Client(
    { name: 'elicitgate-diff-node', version: '1.0.0' },
    { capabilities: { elicitation: { form: {}, url: {} } } },
  );
  let markSurfaced;
  const surfaced = new Promise((r) => { markSurfaced = r; });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const shown = describe(request.params, 'callback');
    rec.surfaced.push(shown);
    markSurfaced();
    if (opt['accept-colour'] && shown.mode === 'form' && JSON.stringify(shown.props) === '["colour"]') {
      rec.sent = { action: 'accept', content: { colour: 'blue' } };
      return { action: 'accept', content: { colour: 'blue' } };
    }
    return { action: 'decline' };
  });
  const errors = [];
  client.onerror = (e) => { if (errors.length < 3) errors.push(short(e?.message ?? e, 300)); };
  let transport;
  if (opt.command) {
    const [command, ...args] = opt.command.split(' ').filter((w) => w);
    transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: 'inherit' });
  } else {
    transport = new StreamableHTTPClientTransport(new URL(opt.url));
  }
  const work = (async () => {
    try {
      await client.connect(transport, { timeout: timeoutMs });
      const result = await client.callTool({ name: c.name, arguments: {} }, undefined, { timeout: timeoutMs });
      rec.call = 'ok';
      const first = (result.content ?? []).find((x) => x.type === 'text');
      try {
        const parsed = first ? JSON.parse(first.text) : null;
        if (parsed && typeof parsed === 'object') {
          rec.answer = parsed.answer ?? null;
          if ('answer_raw' in parsed) rec.answer_raw = parsed.answer_raw;
        }
      } catch { /* not JSON */ }
      rec.detail = `result isError=${result.isError ?? false}`;
    } catch (e) {
      rec.call = 'error';
      if (e instanceof UrlElicitationRequiredError) {
        for (const el of e.elicitations) rec.surfaced.push(describe(el, 'error-32042'));
        if (e.elicitations.length) markSurfaced();
      }
      rec.detail = short(e instanceof McpError ? `McpError ${e.code}: ${e.message}` : `${e?.name ?? 'Error'}: ${e?.message ?? e}`);
    }
  })();
  await Promise.race([
    work,
    sleep(timeoutMs),
    surfaced.then(() => sleep(AFTER_SURFACED_MS)).then(() => {
      if (rec.call === 'timeout') rec.detail = `ended ${AFTER_SURFACED_MS / 1000}s after the elicitation`;
    }),
  ]);
  if (errors.length) rec.transportErrors = errors;
  try { if (!opt.command && transport.sessionId) await Promise.race([transport.terminateSession(), sleep(500)]); } catch { /* best effort */ }
  try { await Promise.race([client.close(), sleep(500)]); } catch { /* best effort */ }
  rec.ms = Date.now() - started;
  return rec;
}

let next = 0;
async function worker() {
  while (next < cases.length) {
    const c = cases[next++];
    let rec;
    try {
      rec = await runCase(c);
    } catch (e) {
      rec = { case: c.name, client: 'node', surfaced: [], call: 'crash', detail: short(e?.stack ?? e) };
    }
    process.stdout.write(JSON.stringify(rec) + '\n');
  }
}
// Unhandled rejections from abandoned requests (a case cut short) must not end the process.
process.on('unhandledRejection', () => {});
await Promise.all(Array.from({ length: Math.max(1, Number(opt.concurrency)) }, worker));
process.exit(0);
