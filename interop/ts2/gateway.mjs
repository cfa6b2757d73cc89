// The TypeScript SDK v2's client, pinned to 2026-07-28, against `mcp-gateway serve` in front of a
// stdio server nobody here wrote: the gateway's warm pool answers per-request clients.
//
//   node gateway.mjs URL modern
//
// Behind the gateway is the everything server (`@modelcontextprotocol/server-everything`, the
// tools `echo` and `trigger-long-running-operation`) or the Python SDK's stdio server
// (`../py/stdio_server.py`, `echo`, `progress`, `wait`, `cancelled`); the script tells them apart
// by the tools listed. It checks: `server/discover` offers 2026-07-28 and names the child (the
// gateway answers it from the child's `initialize`); no `initialize` is sent; echo; every
// progress notification in order; a slow call cancelled at its first notification (against the
// Python child, which the pair runs as a pool of one, the child's own count then says the
// cancellation reached it); POSTs only, each at 2026-07-28, and no session id ever.
//
// Prints `ok: ...` and exits 0, or `FAIL (step): reason` and exits 1, within a minute.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const OVERALL_TIMEOUT_MS = 60_000;
const MODERN = '2026-07-28';
const CANCEL_POLLS = 50;
const CANCEL_POLL_MS = 100;

const CHILDREN = {
  'mcp-servers/everything': {
    echo: text => ({ name: 'echo', arguments: { message: text }, expect: `Echo: ${text}` }),
    progress: steps => ({ name: 'trigger-long-running-operation', arguments: { duration: 0.25, steps } }),
    slow: { name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 4 } },
  },
  'interop-py-stdio': {
    echo: text => ({ name: 'echo', arguments: { text }, expect: text }),
    progress: steps => ({ name: 'progress', arguments: { steps, delay_ms: 20 } }),
    slow: { name: 'wait', arguments: { ms: 20_000 } },
  },
};

let currentStep = 'start';

function fail(reason) {
  console.log(`FAIL (${currentStep}): ${reason}`);
  process.exit(1);
}

setTimeout(() => fail(`timed out after ${OVERALL_TIMEOUT_MS / 1000} s`), OVERALL_TIMEOUT_MS).unref();

async function step(name, body) {
  currentStep = name;
  return await body();
}

function check(condition, message) {
  if (!condition) {
    throw new Error(message);
  }
}

function text(result) {
  return result?.content?.[0]?.text;
}

/** A `fetch` that records each exchange, its protocol version and any session id answered. */
function recordingFetch(log) {
  return async (url, init = {}) => {
    let what = init.method ?? 'GET';
    if (what === 'POST' && typeof init.body === 'string') {
      const message = JSON.parse(init.body);
      what = `POST ${message.method ?? 'response'}${message.params?.name ? ` ${message.params.name}` : ''}`;
    }
    const version = new Headers(init.headers).get('mcp-protocol-version');
    const entry = { what, version, status: undefined, session: undefined };
    log.push(entry);
    const response = await fetch(url, init);
    entry.status = response.status;
    entry.session = response.headers.get('mcp-session-id') ?? undefined;
    return response;
  };
}

function showLog(log) {
  return log.map(e => `${e.what} [${e.version ?? '-'}] -> ${e.status ?? '...'}`).join('; ');
}

/** The slow tool cancelled at its first progress notification; the call must reject. */
async function cancelSlow(client, child) {
  const controller = new AbortController();
  const outcome = await client
    .callTool(child.slow, {
      signal: controller.signal,
      onprogress: () => controller.abort('the interop client cancels'),
      timeout: 15_000,
    })
    .then(
      result => `answered ${JSON.stringify(result)}`,
      error => error,
    );
  check(typeof outcome !== 'string', `the cancelled call ${outcome}`);
}

/** Polls the Python child's count of cancelled waits (a pool of one: the same child). */
async function childSawCancel(client) {
  for (let poll = 0; poll < CANCEL_POLLS; poll++) {
    const seen = text(await client.callTool({ name: 'cancelled', arguments: {} }));
    if (seen === '1') {
      return;
    }
    await new Promise(resolve => setTimeout(resolve, CANCEL_POLL_MS));
  }
  throw new Error('the child counted no cancelled wait');
}

async function run(url) {
  const log = [];
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch(log) });
  const client = new Client(
    { name: 'interop-ts2-gateway', version: '0.0.0' },
    { versionNegotiation: { mode: { pin: MODERN } } },
  );
  let child;
  try {
    await step('connect', async () => {
      await client.connect(transport);
      check(client.getNegotiatedProtocolVersion() === MODERN, `negotiated ${client.getNegotiatedProtocolVersion()}`);
      const name = client.getServerVersion()?.name;
      child = CHILDREN[name];
      check(child, `server/discover named the server ${JSON.stringify(name)}, not one of the children`);
      check(!log.some(e => e.what === 'POST initialize'), 'the client sent initialize');
    });
    await step('echo', async () => {
      const echo = child.echo('per request through the gateway');
      const answer = text(await client.callTool(echo));
      check(answer === echo.expect, `echo answered ${JSON.stringify(answer)}`);
    });
    await step('progress', async () => {
      const seen = [];
      await client.callTool(child.progress(5), { onprogress: ({ progress }) => seen.push(progress) });
      check(JSON.stringify(seen) === '[1,2,3,4,5]', `progress notifications ${JSON.stringify(seen)}`);
    });
    await step('cancel', async () => {
      await cancelSlow(client, child);
      if (child.slow.name === 'wait') {
        await childSawCancel(client);
      }
      const echo = child.echo('after the cancel');
      check(text(await client.callTool(echo)) === echo.expect, 'echo after the cancel');
    });
    await step('wire', async () => {
      const other = log.find(e => !e.what.startsWith('POST'));
      check(!other, `a ${other?.what} was made; 2026-07-28 is POSTs only`);
      const unversioned = log.find(e => e.version !== MODERN);
      check(!unversioned, `${unversioned?.what} carried MCP-Protocol-Version ${unversioned?.version}`);
      const session = log.find(e => e.session);
      check(!session, `${session?.what} was answered with Mcp-Session-Id ${session?.session}`);
    });
  } catch (error) {
    fail(`${error?.message ?? error}\n  wire: ${showLog(log)}`);
  }
  await client.close();
  return 'server/discover from the child, echo, progress (5 in order), cancel, POSTs only, no session';
}

const [url, scenario] = process.argv.slice(2);
if (!url || scenario !== 'modern') {
  console.log('FAIL (usage): node gateway.mjs URL modern');
  process.exit(1);
}
console.log(`ok: ts2-client modern: ${await run(url)}`);
process.exit(0);
