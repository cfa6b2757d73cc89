// The TypeScript SDK's client against a Streamable HTTP server (ours: examples/echo_server.rs).
//
//   node client.mjs URL SCENARIO
//
// Scenarios:
//   full       initialize, tools/list, echo, progress, ping_client, broadcast, DELETE
//   json       the same against a `--json-response` server: JSON bodies, but SSE when a request
//              sends progress or a ping before its response (SPEC S5)
//   stateless  against a `--stateless` server: no session, GET 405, ping_client fails at once (S20)
//   resume     cut a progress stream after two notifications, resume it with GET + Last-Event-ID
//   oauth      against an `--auth-*` server: the SDK's OAuth flow with auth_server.mjs (oauth.mjs)
//   failover   two `--redis` nodes: node A, which holds the session, killed mid-stream; the
//              stream resumed through node B (node client.mjs URL_A failover URL_B PID_A)
//   traceparent  a `traceparent` in a call's `_meta`; the server's span, exported over OTLP/JSON
//              to this script's receiver on $MCP_OTLP_PORT, has it as its parent (trace.mjs)
//
// Prints `ok: ...` and exits 0, or `FAIL (step): reason` and exits 1. It never runs longer than
// OVERALL_TIMEOUT_MS.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  LoggingMessageNotificationSchema,
  ProgressNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { runOAuth } from './oauth.mjs';
import { runTraceparent } from './trace.mjs';

const OVERALL_TIMEOUT_MS = 60_000;
/** How long one awaited event (a broadcast, a resumed stream) may take. */
const WAIT_MS = 5_000;
/** S20: a server-to-client request in stateless mode fails at once, not after a timeout. */
const STATELESS_PING_LIMIT_MS = 5_000;
const TOOLS = ['broadcast', 'count', 'echo', 'ping_client', 'progress', 'sleep'];

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

/** Resolves with `promise`, or rejects after `ms` with `what` in the message. */
function within(ms, what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The first text of a tool result. */
function text(result) {
  return result?.content?.[0]?.text;
}

/**
 * A `fetch` that remembers every exchange (`POST tools/call echo -> 200 application/json`), so
 * checks can look at the wire and failures can show it.
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
    const entry = { what, status: undefined, type: undefined };
    log.push(entry);
    const response = await fetch(url, init);
    entry.status = response.status;
    entry.type = response.headers.get('content-type')?.split(';')[0];
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
  return log.map(e => `${e.what} -> ${e.status ?? '...'}${e.type ? ` ${e.type}` : ''}`).join('; ');
}

function connectClient(url, log, options = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: recordingFetch(log),
    ...options,
  });
  const client = new Client({ name: 'interop-ts-client', version: '0.0.0' });
  return { client, transport };
}

/** A `progress` call of `steps` notifications 200 ms apart, as `client.request` takes it. */
function progressCall(steps) {
  return { method: 'tools/call', params: { name: 'progress', arguments: { steps, delay_ms: 200 } } };
}

/**
 * A `progress` call on `client` whose notifications go to `progress` and event ids to
 * `tokens`; `twoSeen` resolves at the second notification, when a scenario cuts the stream.
 */
function progressUntilTwo(client, steps, progress, tokens) {
  let cut;
  const twoSeen = new Promise(resolve => {
    cut = resolve;
  });
  const call = client.request(progressCall(steps), CallToolResultSchema, {
    onprogress: ({ progress: n }) => {
      progress.push(n);
      if (progress.length === 2) {
        cut();
      }
    },
    onresumptiontoken: token => tokens.push(token),
  });
  return { call, twoSeen };
}

/**
 * A new transport on `first`'s session, through `url` (what a client does after a network
 * drop), connected, with every progress notification counted into `progress`. SDK quirk
 * (1.32.2): `onprogress` on a resumed request keys its handler by the new request id, but the
 * replayed notifications carry the original request's progress token, so the SDK would report
 * them as unknown: hence one handler for them all.
 */
async function rejoin(url, first, log, progress) {
  const second = connectClient(url, log, { sessionId: first.transport.sessionId });
  second.transport.setProtocolVersion(first.transport.protocolVersion);
  second.client.setNotificationHandler(ProgressNotificationSchema, notification => {
    progress.push(notification.params.progress);
  });
  // A transport with a session id makes `connect` skip initialization.
  await second.client.connect(second.transport);
  return second;
}

async function callTool(client, name, args, options) {
  return await client.callTool({ name, arguments: args }, CallToolResultSchema, options);
}

async function basics(client, transport, scenario) {
  await step('initialize', async () => {
    await client.connect(transport);
    if (scenario === 'stateless') {
      check(transport.sessionId === undefined, `a stateless server gave a session id ${transport.sessionId}`);
    } else {
      check(transport.sessionId, 'no Mcp-Session-Id on the initialize response');
    }
  });
  await step('tools/list', async () => {
    const { tools } = await client.listTools();
    const names = tools.map(tool => tool.name).sort();
    check(same(names, TOOLS), `tools ${JSON.stringify(names)}, expected ${JSON.stringify(TOOLS)}`);
  });
  await step('echo', async () => {
    const result = await callTool(client, 'echo', { text: 'hello from the ts sdk' });
    check(text(result) === 'hello from the ts sdk', `echo answered ${JSON.stringify(result)}`);
  });
  await step('progress', async () => {
    const seen = [];
    const result = await callTool(client, 'progress', { steps: 5, delay_ms: 10 }, {
      onprogress: ({ progress, total }) => seen.push([progress, total]),
    });
    check(text(result) === 'done', `progress answered ${JSON.stringify(result)}`);
    const expected = [1, 2, 3, 4, 5].map(n => [n, 5]);
    check(same(seen, expected), `progress notifications ${JSON.stringify(seen)}, expected ${JSON.stringify(expected)}`);
  });
}

async function runSession(url, scenario) {
  const log = [];
  const { client, transport } = connectClient(url, log);
  const broadcasts = [];
  let broadcastArrived;
  const arrived = new Promise(resolve => {
    broadcastArrived = resolve;
  });
  client.setNotificationHandler(LoggingMessageNotificationSchema, notification => {
    broadcasts.push(notification.params.data);
    broadcastArrived();
  });
  try {
    await basics(client, transport, scenario);
    if (scenario === 'stateless') {
      await step('ping_client', async () => {
        const start = Date.now();
        let outcome;
        let succeeded = false;
        try {
          const result = await callTool(client, 'ping_client', {}, { timeout: 3 * STATELESS_PING_LIMIT_MS });
          succeeded = !result.isError;
          outcome = `${succeeded ? 'result' : 'tool error'}: ${JSON.stringify(result)}`;
        } catch (error) {
          outcome = `error: ${error.message}`;
        }
        verbose(`ping_client on a stateless server: ${outcome}`);
        check(!succeeded, `ping_client succeeded on a stateless server (${outcome})`);
        const elapsed = Date.now() - start;
        check(elapsed < STATELESS_PING_LIMIT_MS, `ping_client took ${elapsed} ms to fail (${outcome})`);
      });
      await step('standalone stream', async () => {
        const get = log.find(e => e.what === 'GET');
        check(!get || get.status === 405, `GET answered ${get?.status}, expected 405 when stateless`);
      });
    } else {
      await step('ping_client', async () => {
        const result = await callTool(client, 'ping_client', {});
        check(text(result) === 'pong', `ping_client answered ${JSON.stringify(result)}`);
      });
      await step('broadcast', async () => {
        const message = `broadcast from the ts sdk ${process.pid}`;
        const result = await callTool(client, 'broadcast', { text: message });
        check(text(result) === 'sent', `broadcast answered ${JSON.stringify(result)}`);
        await within(WAIT_MS, 'notifications/message on the standalone stream', arrived);
        check(same(broadcasts, [message]), `broadcasts ${JSON.stringify(broadcasts)}, expected [${JSON.stringify(message)}]`);
      });
      if (scenario === 'json') {
        await step('json-response', async () => {
          // Without this the scenario would pass against a server that streams everything.
          const type = what => log.find(e => e.what === what)?.type;
          check(type('POST tools/call echo') === 'application/json', `echo was answered with ${type('POST tools/call echo')}, expected application/json`);
          for (const tool of ['progress', 'ping_client']) {
            const got = type(`POST tools/call ${tool}`);
            check(got === 'text/event-stream', `${tool} was answered with ${got}, expected a switch to text/event-stream`);
          }
        });
      }
      await step('terminate', async () => {
        await transport.terminateSession();
        const deleted = log.find(e => e.what === 'DELETE');
        check(deleted?.status >= 200 && deleted.status < 300, `DELETE answered ${deleted?.status}`);
        check(transport.sessionId === undefined, 'the session id survived DELETE');
      });
    }
  } catch (error) {
    fail(`${describe(error)}\n  wire: ${showLog(log)}`);
  }
  verbose(`wire: ${showLog(log)}`);
  await client.close();
  return scenario === 'stateless'
    ? 'initialize, tools/list, echo, progress, ping_client failed promptly, no GET stream'
    : 'initialize, tools/list, echo, progress, ping_client, broadcast, DELETE';
}

/**
 * Cuts a progress stream after two notifications and resumes it from the last event id with a
 * new transport on the same session (what a client does after a network drop), then checks the
 * five notifications and the result each arrived exactly once.
 */
async function runResume(url) {
  const log = [];
  const steps = 5;
  const progress = [];
  const results = [];
  const tokens = [];
  let resumedFrom;
  try {
    const first = connectClient(url, log);
    await step('initialize', async () => {
      await first.client.connect(first.transport);
      check(first.transport.sessionId, 'no Mcp-Session-Id on the initialize response');
    });
    await step('cut the stream', async () => {
      const { call, twoSeen } = progressUntilTwo(first.client, steps, progress, tokens);
      call.then(result => results.push(result), () => {});
      await within(WAIT_MS, 'two progress notifications', twoSeen);
      // Closing the transport aborts the POST's fetch: the connection drops, the session stays.
      await first.transport.close();
      check(tokens.length > 0, 'the stream carried no event ids, so it cannot be resumed');
    });

    // Let the server send the third notification while nobody listens, so the resume both
    // replays from the store and goes on live.
    await new Promise(resolve => setTimeout(resolve, 300));

    await step('resume', async () => {
      const second = await rejoin(url, first, log, progress);
      resumedFrom = tokens[tokens.length - 1];
      // With a resumption token the SDK sends nothing: it opens a GET with Last-Event-ID and
      // gives the response it replays the id of this new request.
      const result = await within(
        WAIT_MS,
        `the resumed stream (Last-Event-ID ${resumedFrom})`,
        second.client.request(
          progressCall(steps),
          CallToolResultSchema,
          { resumptionToken: resumedFrom, onresumptiontoken: token => tokens.push(token) },
        ),
      );
      results.push(result);
      const posts = log.filter(e => e.what === 'POST tools/call progress');
      check(posts.length === 1, `the tool was called ${posts.length} times; resuming must not call it again`);
      check(results.length === 1 && text(results[0]) === 'done', `results ${JSON.stringify(results)}, expected one "done"`);
      const expected = [1, 2, 3, 4, 5];
      check(same(progress, expected), `progress notifications ${JSON.stringify(progress)}, expected each of ${JSON.stringify(expected)} once`);
      verbose(`wire: ${showLog(log)}; event ids: ${tokens.join(' ')}`);
      await second.transport.terminateSession();
      await second.client.close();
    });
  } catch (error) {
    fail(`${describe(error)}\n  wire: ${showLog(log)}; event ids: ${tokens.join(' ')}`);
  }
  return `cut after 2 of ${steps} notifications, resumed from ${resumedFrom}: 5 notifications and 1 result, once each`;
}

/**
 * Two nodes sharing Redis (`echo_server --redis`). The session starts on node A, which holds
 * it, and a progress call runs there; after two notifications A is killed (SIGKILL) and the
 * client resumes the stream from its last event id through node B, which takes the session
 * over: the call ends with the dead holder's error, each notification A published arrived
 * once, and the session goes on through B.
 */
async function runFailover(urlA, urlB, pidA) {
  const log = [];
  const progress = [];
  const tokens = [];
  const steps = 20;
  let resumedFrom;
  try {
    const first = connectClient(urlA, log);
    await step('initialize on A', async () => {
      await first.client.connect(first.transport);
      check(first.transport.sessionId, 'no Mcp-Session-Id on the initialize response');
    });
    await step('kill A mid-stream', async () => {
      const { call, twoSeen } = progressUntilTwo(first.client, steps, progress, tokens);
      call.catch(() => {});
      await within(WAIT_MS, 'two progress notifications', twoSeen);
      process.kill(Number(pidA), 'SIGKILL');
      await first.transport.close().catch(() => {});
      check(tokens.length > 0, 'the stream carried no event ids, so it cannot be resumed');
    });
    await step('resume through B', async () => {
      const second = await rejoin(urlB, first, log, progress);
      // SDK quirk (1.32.2): a replayed *error* response keeps the original request's id (only
      // results are given the resumed request's), so the SDK drops it as unknown. Watch the
      // transport for it instead.
      let answered;
      const answer = new Promise(resolve => {
        answered = resolve;
      });
      const deliver = second.transport.onmessage;
      second.transport.onmessage = (message, extra) => {
        if (message.id !== undefined && (message.error || message.result)) {
          answered(message);
        }
        deliver?.(message, extra);
      };
      resumedFrom = tokens[tokens.length - 1];
      second.client
        .request(progressCall(steps), CallToolResultSchema, { resumptionToken: resumedFrom })
        .catch(() => {});
      const message = await within(3 * WAIT_MS, `the resumed stream (Last-Event-ID ${resumedFrom})`, answer);
      check(
        message.error?.message?.includes('stopped before answering'),
        `expected the dead holder's error, got ${JSON.stringify(message)}`,
      );
      const expected = Array.from({ length: progress.length }, (_, i) => i + 1);
      check(
        progress.length >= 2 && progress.length < steps && same(progress, expected),
        `progress notifications ${JSON.stringify(progress)}, expected 1..k once each`,
      );
      const echo = await callTool(second.client, 'echo', { text: 'after' });
      check(text(echo) === 'after', `echo through B answered ${JSON.stringify(echo)}`);
      await second.transport.terminateSession();
      await second.client.close();
    });
  } catch (error) {
    fail(`${describe(error)}\n  wire: ${showLog(log)}; event ids: ${tokens.join(' ')}`);
  }
  return `A killed after ${progress.length} of ${steps} notifications, resumed through B from ${resumedFrom}: each once, the call answered with the dead holder's error, the session on`;
}

async function main() {
  const [url, scenario, ...rest] = process.argv.slice(2);
  const scenarios = ['full', 'json', 'stateless', 'resume', 'oauth', 'failover', 'traceparent'];
  if (!url || !scenarios.includes(scenario) || (scenario === 'failover' && rest.length !== 2)) {
    console.log('usage: node client.mjs URL full|json|stateless|resume|oauth|traceparent, or URL_A failover URL_B PID_A');
    process.exit(2);
  }
  const runners = {
    resume: () => runResume(url),
    failover: () => runFailover(url, rest[0], rest[1]),
    traceparent: () => runTraceparent(url, { step, check }),
    oauth: async () => {
      const log = [];
      try {
        return await runOAuth(url, { step, check, wire: recordingFetch(log) });
      } catch (error) {
        fail(`${describe(error)}\n  wire: ${showLog(log)}`);
      }
    },
  };
  const what = await (runners[scenario] ?? (() => runSession(url, scenario)))();
  console.log(`ok: ts-client ${scenario}: ${what}`);
  process.exit(0);
}

main().catch(error => fail(error?.stack ?? String(error)));
