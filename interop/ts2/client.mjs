// The TypeScript SDK v2's client (`@modelcontextprotocol/client`) against a Streamable HTTP server
// (ours: examples/echo_server.rs), on the 2026-07-28 protocol.
//
//   node client.mjs URL SCENARIO
//
// Scenarios:
//   modern  the client pinned to 2026-07-28 (`mode: { pin }`): its connect-time server/discover
//           must offer that revision, with no fallback
//   auto    the client's probe (`mode: 'auto'`): server/discover, then 2026-07-28 because the
//           answer is modern evidence (a legacy server would get `initialize`)
//   nodes   two echo_server nodes sharing a Redis (`node client.mjs URL_A nodes URL_B PID_A`,
//           the pid unused): a client on node a opens a listen stream (`subscriptions/listen`,
//           tools), a client on node b announces a change (`notify_change`), and node a's stream
//           tells it; then `confirm` on node a answers input-required with a sealed
//           `requestState`, and the retry, sent to node b with the state echoed and the
//           elicitation answered, completes there
// Neither sends `initialize`; both read the server's name from the discovery result's `_meta`.
// Both then list the tools, call `echo` and `progress` (every progress notification in order,
// before the result), and check the wire: only POSTs, each with `MCP-Protocol-Version:
// 2026-07-28`, no `Mcp-Session-Id` ever.
//
// Prints `ok: ...` and exits 0, or `FAIL (step): reason` and exits 1. It never runs longer than
// OVERALL_TIMEOUT_MS.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const OVERALL_TIMEOUT_MS = 60_000;
const MODERN = '2026-07-28';
const TOOLS = ['broadcast', 'count', 'echo', 'ping_client', 'progress', 'sleep'];
// And those it lists to a 2026-07-28 client only: listen streams, input-required, Mcp-Param-*.
const MODERN_TOOLS = [...TOOLS, 'confirm', 'lookup', 'notify_change'].sort();

let currentStep = 'start';

function fail(reason) {
  console.log(`FAIL (${currentStep}): ${reason}`);
  process.exit(1);
}

setTimeout(() => fail(`timed out after ${OVERALL_TIMEOUT_MS / 1000} s`), OVERALL_TIMEOUT_MS);

async function step(name, body) {
  currentStep = name;
  return await body();
}

function check(condition, message) {
  if (!condition) {
    throw new Error(message);
  }
}

function same(actual, expected) {
  return JSON.stringify(actual) === JSON.stringify(expected);
}

/** The first text of a tool result. */
function text(result) {
  return result?.content?.[0]?.text;
}

/**
 * A `fetch` that remembers every exchange (`POST tools/call echo -> 200 application/json`), with
 * the request's protocol version and the answer's session id, so checks can look at the wire and
 * failures can show it.
 */
function recordingFetch(log) {
  return async (url, init = {}) => {
    const method = init.method ?? 'GET';
    let what = method;
    if (method === 'POST' && typeof init.body === 'string') {
      try {
        const message = JSON.parse(init.body);
        what = `POST ${message.method ?? 'response'}${message.params?.name ? ` ${message.params.name}` : ''}`;
      } catch {
        // Not JSON: the exchange is still worth recording.
      }
    }
    const version = new Headers(init.headers).get('mcp-protocol-version');
    const entry = { what, version, status: undefined, type: undefined, session: undefined };
    log.push(entry);
    const response = await fetch(url, init);
    entry.status = response.status;
    entry.type = response.headers.get('content-type')?.split(';')[0];
    entry.session = response.headers.get('mcp-session-id') ?? undefined;
    return response;
  };
}

/** With INTEROP_VERBOSE=1, details go to stderr; stdout keeps its one line. */
function verbose(line) {
  if (process.env.INTEROP_VERBOSE) {
    console.error(line);
  }
}

/** The message of `error` and of its cause (`fetch failed` says nothing without it). */
function describe(error) {
  const cause = error?.cause ? ` (${error.cause.message ?? error.cause})` : '';
  return `${error?.message ?? error}${cause}`;
}

function showLog(log) {
  return log
    .map(e => `${e.what} [${e.version ?? '-'}] -> ${e.status ?? '...'}${e.type ? ` ${e.type}` : ''}`)
    .join('; ');
}

async function run(url, scenario) {
  const log = [];
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch(log) });
  const mode = scenario === 'modern' ? { pin: MODERN } : 'auto';
  const client = new Client(
    { name: 'interop-ts2-client', version: '0.0.0' },
    { versionNegotiation: { mode } },
  );
  try {
    await step('connect', async () => {
      await client.connect(transport);
      const version = client.getNegotiatedProtocolVersion();
      check(version === MODERN, `negotiated ${version}, expected ${MODERN}`);
      const first = log[0]?.what;
      check(first === 'POST server/discover', `the first exchange was ${first}, expected the server/discover probe`);
      const offered = client.getDiscoverResult()?.supportedVersions ?? [];
      check(offered.includes(MODERN), `server/discover offered ${JSON.stringify(offered)}`);
      const server = client.getServerVersion();
      check(server?.name === 'echo_server', `the server is named ${JSON.stringify(server)}, expected echo_server`);
      check(!log.some(e => e.what === 'POST initialize'), 'the client sent initialize');
    });
    await step('tools/list', async () => {
      const { tools } = await client.listTools();
      const names = tools.map(tool => tool.name).sort();
      check(same(names, MODERN_TOOLS), `tools ${JSON.stringify(names)}, expected ${JSON.stringify(MODERN_TOOLS)}`);
    });
    await step('echo', async () => {
      const result = await client.callTool({ name: 'echo', arguments: { text: 'hello from the ts sdk v2' } });
      check(text(result) === 'hello from the ts sdk v2', `echo answered ${JSON.stringify(result)}`);
    });
    await step('progress', async () => {
      const seen = [];
      const result = await client.callTool(
        { name: 'progress', arguments: { steps: 5, delay_ms: 10 } },
        { onprogress: ({ progress, total }) => seen.push([progress, total]) },
      );
      check(text(result) === 'done', `progress answered ${JSON.stringify(result)}`);
      const expected = [1, 2, 3, 4, 5].map(n => [n, 5]);
      check(same(seen, expected), `progress notifications ${JSON.stringify(seen)}, expected ${JSON.stringify(expected)}`);
      const answered = log.find(e => e.what === 'POST tools/call progress')?.type;
      check(answered === 'text/event-stream', `progress was answered with ${answered}, expected text/event-stream`);
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
    fail(`${describe(error)}\n  wire: ${showLog(log)}`);
  }
  verbose(`wire: ${showLog(log)}`);
  await client.close();
  const opening = scenario === 'modern' ? 'pinned to 2026-07-28 by server/discover' : 'server/discover probe, then 2026-07-28';
  return `${opening}: tools/list, echo, progress (5 in order), POSTs only, no session`;
}

/** Rejects after `ms` with `message`, for a race with what should come before. */
function deadline(ms, message) {
  return new Promise((_, reject) => setTimeout(() => reject(new Error(message)), ms));
}

async function nodes(urlA, urlB) {
  const logA = [];
  const logB = [];
  const options = {
    versionNegotiation: { mode: { pin: MODERN } },
    capabilities: { elicitation: { form: {} } },
    inputRequired: { autoFulfill: false },
  };
  const a = new Client({ name: 'interop-ts2-client', version: '0.0.0' }, options);
  const b = new Client({ name: 'interop-ts2-client', version: '0.0.0' }, options);
  try {
    await step('connect', async () => {
      await a.connect(new StreamableHTTPClientTransport(new URL(urlA), { fetch: recordingFetch(logA) }));
      await b.connect(new StreamableHTTPClientTransport(new URL(urlB), { fetch: recordingFetch(logB) }));
    });
    let heard;
    const changed = new Promise(resolve => {
      heard = resolve;
    });
    a.setNotificationHandler('notifications/tools/list_changed', () => heard());
    const subscription = await step('listen on node a', async () => {
      const listening = await a.listen({ toolsListChanged: true });
      const honoured = listening.honoredFilter;
      check(honoured?.toolsListChanged === true, `the server honoured ${JSON.stringify(honoured)}`);
      return listening;
    });
    await step('a change announced through node b', async () => {
      await b.callTool({ name: 'notify_change', arguments: { list: 'tools' } });
      await Promise.race([changed, deadline(5_000, 'node a told no tools/list_changed within 5 s')]);
    });
    await step('confirm on node a, retried on node b', async () => {
      const first = await a.callTool(
        { name: 'confirm', arguments: { text: 'two nodes' } },
        { allowInputRequired: true },
      );
      const state = first?.requestState;
      check(first?.resultType === 'input_required' && typeof state === 'string', `confirm answered ${JSON.stringify(first)}`);
      check(first.inputRequests?.confirm?.method === 'elicitation/create', `input requests ${JSON.stringify(first.inputRequests)}`);
      const retried = await b.callTool({
        name: 'confirm',
        arguments: { text: 'two nodes' },
        inputResponses: { confirm: { action: 'accept', content: { ok: true } } },
        requestState: state,
      });
      check(text(retried) === 'confirmed: two nodes', `the retry on node b answered ${JSON.stringify(retried)}`);
      const retry = logB.find(e => e.what === 'POST tools/call confirm');
      check(retry?.status === 200, `the retry on node b was answered ${retry?.status}`);
    });
    await step('close the listen stream', async () => {
      await subscription.close();
      const how = await Promise.race([subscription.closed, deadline(5_000, 'the listen stream did not close')]);
      check(how === 'local', `the listen stream closed ${how}`);
    });
  } catch (error) {
    fail(`${describe(error)}\n  wire a: ${showLog(logA)}\n  wire b: ${showLog(logB)}`);
  }
  verbose(`wire a: ${showLog(logA)}\nwire b: ${showLog(logB)}`);
  await a.close();
  await b.close();
  return 'listen stream on node a told of a change announced through node b; confirm input-required on node a, its sealed requestState retried on node b';
}

async function main() {
  const [url, scenario, urlB] = process.argv.slice(2);
  if (!url || !['modern', 'auto', 'nodes'].includes(scenario) || (scenario === 'nodes' && !urlB)) {
    console.log('usage: node client.mjs URL modern|auto, or node client.mjs URL_A nodes URL_B PID_A');
    process.exit(2);
  }
  const what = scenario === 'nodes' ? await nodes(url, urlB) : await run(url, scenario);
  console.log(`ok: ts2-client ${scenario}: ${what}`);
  process.exit(0);
}

main().catch(error => fail(error?.stack ?? String(error)));
