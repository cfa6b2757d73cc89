// The TypeScript SDK's `StdioClientTransport` running `mcp-gateway connect URL`: a stdio-only host
// reaching a Streamable HTTP server through the gateway. The gateway's binary is $MCP_GATEWAY.
//
//   node connect.mjs URL SCENARIO
//
// Scenarios, against a server with `echo {text}` and `progress {steps, delay_ms}` (our
// echo_server, or server.mjs):
//   connect         initialize over stdio, tools/list, echo, progress with every notification in
//                   order, then stdin closed: the gateway ends (its session closed with DELETE)
//   connect-resume  the same, with a TCP proxy of this script's between the gateway and the
//                   server that cuts every connection after the second progress notification:
//                   the gateway's client resumes the stream (GET with Last-Event-ID, through the
//                   proxy again) and the gateway's stdout carries every notification once, in
//                   order, then the result. Checked as the SDK's stdio transport reads them, not
//                   by `onprogress`: the SDK (1.32) runs a notification's handler a microtask
//                   after the response's, so of notifications that come in one read with the
//                   response (the replay after a resumption is one burst), the last are dropped
//                   as "an unknown token" whatever their order on the wire
//   connect-oauth   against an `--auth-*` server: the gateway with `--oauth --token-file F`
//                   prints the authorization URL on stderr; this script plays the browser
//                   (follows it, and the redirect to the gateway's loopback port); echo; then a
//                   second gateway with the same token file reaches the server with no
//                   authorization at all
//
// Prints `ok: ...` and exits 0, or `FAIL (step): reason` and exits 1, within a minute.

import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { check, same, step, text, verdict, within } from './harness.mjs';

const GATEWAY = process.env.MCP_GATEWAY;
/** Progress calls' pace: slow enough to cut the stream between two notifications. */
const STEP_MS = 200;

/** A client over `mcp-gateway connect URL ARGS...`; the gateway's stderr goes to `onStderr`. */
function overStdio(url, args = [], onStderr = () => {}) {
  const transport = new StdioClientTransport({
    command: GATEWAY,
    args: ['connect', url, ...args],
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'info' },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', chunk => {
    stderr += chunk;
    process.stderr.write(chunk);
    onStderr(stderr);
  });
  const client = new Client({ name: 'interop-ts-connect', version: '0.0.0' });
  client.onerror = error => console.error(`client error: ${error.message}`);
  return { client, transport };
}

async function basics(client) {
  const { tools } = await step('tools/list', () => client.listTools());
  const names = tools.map(tool => tool.name);
  check(names.includes('echo') && names.includes('progress'), `tools ${names.join(', ')}`);
  await step('echo', async () => {
    const answer = text(await client.callTool({ name: 'echo', arguments: { text: 'over stdio' } }));
    check(answer === 'over stdio', `echo answered ${JSON.stringify(answer)}`);
  });
}

/** A progress call of `steps`; `onNote(count)` is told each notification's arrival. */
async function progress(client, steps, onNote = () => {}) {
  const seen = [];
  const result = await client.callTool(
    { name: 'progress', arguments: { steps, delay_ms: STEP_MS } },
    CallToolResultSchema,
    {
      onprogress: ({ progress: n }) => {
        seen.push(n);
        onNote(seen.length);
      },
      timeout: 30_000,
    },
  );
  check(text(result) === 'done', `progress answered ${JSON.stringify(result)}`);
  const expected = Array.from({ length: steps }, (_, i) => i + 1);
  check(same(seen, expected), `progress notifications ${JSON.stringify(seen)}, expected ${JSON.stringify(expected)}`);
}

/** Closes stdin and waits for the gateway to exit by itself. */
async function close(transport) {
  const exited = new Promise(resolve => transport._process?.once('exit', resolve));
  await transport.close();
  await within(10_000, 'the gateway exiting after stdin ended', exited);
}

async function runConnect(url) {
  const { client, transport } = overStdio(url);
  await step('initialize', () => within(20_000, 'initialize', client.connect(transport)));
  await basics(client);
  await step('progress', () => progress(client, 5));
  await step('close', () => close(transport));
  return 'initialize, tools/list, echo, 5 progress in order over stdio, stdin closed';
}

/** A TCP proxy to `url`'s port; `cut()` destroys every connection it carries. */
async function proxyTo(url) {
  const target = new URL(url);
  const sockets = new Set();
  let connections = 0;
  const server = net.createServer(inbound => {
    connections += 1;
    const outbound = net.connect(Number(target.port), target.hostname);
    for (const socket of [inbound, outbound]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
  const proxied = new URL(url);
  proxied.port = String(server.address().port);
  return {
    url: proxied.href,
    connections: () => connections,
    cut: () => sockets.forEach(socket => socket.destroy()),
    close: () => server.close(),
  };
}

/** What the transport reads of a call's progress and its response, in the order it reads them. */
function wireOrder(transport) {
  const read = [];
  const dispatch = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (message.method === 'notifications/progress') {
      read.push(message.params.progress);
    } else if ('result' in message || 'error' in message) {
      read.push(`response ${message.id}`);
    }
    dispatch?.(message, extra);
  };
  return read;
}

async function runResume(url) {
  const proxy = await proxyTo(url);
  const { client, transport } = overStdio(proxy.url);
  await step('initialize', () => within(20_000, 'initialize', client.connect(transport)));
  await basics(client);
  const read = wireOrder(transport);
  let before;
  await step('progress with a cut', async () => {
    const result = await client.callTool(
      { name: 'progress', arguments: { steps: 5, delay_ms: STEP_MS } },
      CallToolResultSchema,
      {
        onprogress: () => {
          if (before === undefined) {
            before = proxy.connections();
            proxy.cut();
          }
        },
        timeout: 30_000,
      },
    );
    check(text(result) === 'done', `progress answered ${JSON.stringify(result)}`);
    const order = read.map(String);
    const expected = ['1', '2', '3', '4', '5', order.at(-1)];
    check(
      same(order, expected) && order.at(-1).startsWith('response'),
      `the gateway wrote ${JSON.stringify(order)}, expected 1 to 5 once each, then the response`,
    );
  });
  check(proxy.connections() > before, 'no new connection after the cut: the stream was not resumed');
  await step('echo after the cut', async () => {
    const answer = text(await client.callTool({ name: 'echo', arguments: { text: 'still here' } }));
    check(answer === 'still here', `echo answered ${JSON.stringify(answer)}`);
  });
  await step('close', () => close(transport));
  proxy.close();
  return 'a stream cut after 2 of 5 notifications resumed by the gateway: each once, in order, then the result';
}

/** Plays the browser: follows the authorization URL the gateway printed, and its redirect. */
async function authorizeFrom(stderr, visited) {
  const match = stderr.match(/open (http:\/\/\S+) to authorize/);
  if (!match || visited.has(match[1])) {
    return;
  }
  visited.add(match[1]);
  const answer = await fetch(match[1], { redirect: 'follow' });
  check(answer.ok, `the authorization and its redirect answered ${answer.status}`);
}

async function runOAuth(url) {
  const dir = mkdtempSync(path.join(tmpdir(), 'interop-connect-'));
  const tokenFile = path.join(dir, 'tokens.json');
  const visited = new Set();
  const browse = stderr => authorizeFrom(stderr, visited).catch(error => console.error(`browser: ${error}`));
  try {
    const first = overStdio(url, ['--oauth', '--token-file', tokenFile], browse);
    await step('authorize', () => within(30_000, 'initialize through OAuth', first.client.connect(first.transport)));
    check(visited.size === 1, `the gateway asked for ${visited.size} authorizations`);
    await basics(first.client);
    await step('close', () => close(first.transport));
    await step('token file', async () => {
      const mode = statSync(tokenFile).mode & 0o777;
      check(mode === 0o600, `the token file's mode is ${mode.toString(8)}, expected 600`);
      check(readFileSync(tokenFile, 'utf8').includes('access_token'), 'no token in the token file');
    });
    const again = overStdio(url, ['--oauth', '--token-file', tokenFile], browse);
    await step('tokens kept', () => within(20_000, 'initialize with kept tokens', again.client.connect(again.transport)));
    await basics(again.client);
    check(visited.size === 1, 'the second gateway asked for an authorization again');
    await step('close again', () => close(again.transport));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return 'authorized through the loopback redirect, echo; a second run used the token file, no authorization';
}

const [url, scenario] = process.argv.slice(2);
const runners = { connect: runConnect, 'connect-resume': runResume, 'connect-oauth': runOAuth };
if (!url || !runners[scenario] || !GATEWAY) {
  console.log('FAIL (usage): MCP_GATEWAY=BIN node connect.mjs URL connect|connect-resume|connect-oauth');
  process.exit(1);
}
await verdict(`ts-client over mcp-gateway connect ${scenario}`, () => runners[scenario](url));
