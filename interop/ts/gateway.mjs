// The TypeScript SDK's client against `mcp-gateway serve` in front of a stdio server nobody here
// wrote, in the session family (the SDK's newest revision, 2025-11-25).
//
//   node gateway.mjs URL SCENARIO
//
// Scenarios:
//   everything  the SDK's everything server (`@modelcontextprotocol/server-everything`) behind the
//               gateway: tools/list, echo, trigger-long-running-operation with its progress,
//               trigger-sampling-request answered by this client, a long operation cancelled
//   py-stdio    the Python SDK's stdio server (../py/stdio_server.py): echo, progress, sample,
//               a `wait` cancelled, and the child's own count of cancelled waits
//
// Prints `ok: ...` and exits 0, or `FAIL (step): reason` and exits 1, within a minute.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { check, recordingFetch, same, step, text, verdict, within } from './harness.mjs';

/** How long the child's count of cancelled calls may take to show the cancellation. */
const CANCEL_POLLS = 50;
const CANCEL_POLL_MS = 100;

/** The tools each child must list, and the names this script calls them by. */
const CHILDREN = {
  everything: {
    tools: ['echo', 'trigger-long-running-operation', 'trigger-sampling-request'],
    echo: text => ({ name: 'echo', arguments: { message: text }, expect: `Echo: ${text}` }),
    progress: steps => ({ name: 'trigger-long-running-operation', arguments: { duration: 0.25, steps } }),
    sample: prompt => ({ name: 'trigger-sampling-request', arguments: { prompt, maxTokens: 16 } }),
    slow: () => ({ name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 4 } }),
  },
  'py-stdio': {
    tools: ['cancelled', 'echo', 'progress', 'sample', 'wait'],
    echo: text => ({ name: 'echo', arguments: { text }, expect: text }),
    progress: steps => ({ name: 'progress', arguments: { steps, delay_ms: 20 } }),
    sample: prompt => ({ name: 'sample', arguments: { prompt } }),
    slow: () => ({ name: 'wait', arguments: { ms: 20_000 } }),
  },
};

/** A client declaring sampling, whose sampling handler answers `sampled: PROMPT`. */
function samplingClient(samples) {
  const client = new Client({ name: 'interop-ts-gateway', version: '0.0.0' }, { capabilities: { sampling: {} } });
  client.setRequestHandler(CreateMessageRequestSchema, request => {
    const prompt = request.params.messages.map(m => m.content?.text ?? '').join(' ');
    samples.push(prompt);
    return { model: 'interop', role: 'assistant', content: { type: 'text', text: `sampled: ${prompt}` } };
  });
  return client;
}

async function call(client, { name, arguments: args }, options) {
  return await client.callTool({ name, arguments: args }, CallToolResultSchema, options);
}

/** Calls the child's slow tool and aborts it at its first progress notification. */
async function cancelSlow(client, child) {
  const controller = new AbortController();
  const started = Date.now();
  const outcome = await call(client, child.slow(), {
    signal: controller.signal,
    onprogress: () => controller.abort('the interop client cancels'),
    timeout: 15_000,
  }).then(
    result => `answered ${JSON.stringify(result)}`,
    error => error,
  );
  check(typeof outcome !== 'string', `the cancelled call ${outcome}`);
  return Date.now() - started;
}

/** Waits, bounded, for the SDK's `notifications/cancelled` POST to be answered 202. */
async function cancellationSent(log) {
  for (let poll = 0; poll < CANCEL_POLLS; poll++) {
    const sent = log.find(e => e.what === 'POST notifications/cancelled');
    if (sent?.status !== undefined) {
      check(sent.status === 202, `notifications/cancelled answered ${sent.status}`);
      return;
    }
    await new Promise(resolve => setTimeout(resolve, CANCEL_POLL_MS));
  }
  throw new Error('no notifications/cancelled answered');
}

/** Polls the Python child's count of cancelled waits until it says one. */
async function childSawCancel(client) {
  for (let poll = 0; poll < CANCEL_POLLS; poll++) {
    const seen = text(await call(client, { name: 'cancelled', arguments: {} }));
    if (seen === '1') {
      return;
    }
    check(seen === '0', `cancelled says ${seen}`);
    await new Promise(resolve => setTimeout(resolve, CANCEL_POLL_MS));
  }
  throw new Error(`the child counted no cancelled wait in ${(CANCEL_POLLS * CANCEL_POLL_MS) / 1000} s`);
}

async function run(url, scenario) {
  const child = CHILDREN[scenario];
  const log = [];
  const samples = [];
  const unexpected = [];
  const client = samplingClient(samples);
  client.onerror = error => unexpected.push(error.message);
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch(log) });
  return await verdict(`ts-client ${scenario}`, async () => {
    await step('initialize', () => within(20_000, 'initialize', client.connect(transport)));
    check(transport.sessionId, 'no Mcp-Session-Id');
    const listed = await step('tools/list', () => client.listTools());
    const names = listed.tools.map(tool => tool.name);
    check(child.tools.every(name => names.includes(name)), `tools ${names.join(', ')}`);
    await step('echo', async () => {
      const echo = child.echo('through the gateway');
      const answer = text(await call(client, echo));
      check(answer === echo.expect, `echo answered ${JSON.stringify(answer)}`);
    });
    await step('progress', async () => {
      const seen = [];
      await call(client, child.progress(5), { onprogress: ({ progress }) => seen.push(progress) });
      check(same(seen, [1, 2, 3, 4, 5]), `progress notifications ${JSON.stringify(seen)}`);
    });
    await step('sampling', async () => {
      const answer = text(await call(client, child.sample('gateway sampling')));
      check(samples.length === 1, `the sampling handler ran ${samples.length} times`);
      check(samples[0].includes('gateway sampling'), `the child asked ${JSON.stringify(samples[0])}`);
      check(answer.includes('sampled: '), `the tool returned ${JSON.stringify(answer)}`);
    });
    await step('cancel', async () => {
      await cancelSlow(client, child);
      await cancellationSent(log);
      if (scenario === 'py-stdio') {
        await childSawCancel(client);
      }
      // The session goes on after a cancelled call.
      const echo = child.echo('after the cancel');
      check(text(await call(client, echo)) === echo.expect, 'echo after the cancel');
    });
    await step('close', async () => {
      await transport.terminateSession();
      await client.close();
      check(log.some(e => e.what === 'DELETE' && e.status >= 200 && e.status < 300), 'DELETE not 2xx');
      check(unexpected.length === 0, `client errors: ${unexpected.join('; ')}`);
    });
    return 'initialize, tools/list, echo, 5 progress in order, sampling through the gateway, cancel, DELETE';
  }, log);
}

const [url, scenario] = process.argv.slice(2);
if (!url || !['everything', 'py-stdio'].includes(scenario)) {
  console.log('FAIL (usage): node gateway.mjs URL everything|py-stdio');
  process.exit(1);
}
await run(url, scenario);
