// The `traceparent` scenario of client.mjs: the TypeScript SDK's client puts a W3C
// `traceparent` in a `tools/call`'s `_meta` (the key the MCP specification reserves, SEP-414);
// the server (echo_server with OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_PROTOCOL=
// http/json) exports its span over OTLP/HTTP to the receiver this scenario runs on
// $MCP_OTLP_PORT, and the span `tools/call echo` must be in the client's trace, its parent the
// client's span id (SPEC O1).

import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

/** How long the server's batch exporter may take to send the span. */
const EXPORT_WAIT_MS = 15_000;

/** An OTLP/HTTP JSON receiver on `port`: every span posted to `/v1/traces`, as it comes. */
async function receiver(port) {
  const spans = [];
  const waiters = new Set();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', chunk => (body += chunk));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        try {
          for (const resource of JSON.parse(body).resourceSpans ?? []) {
            for (const scope of resource.scopeSpans ?? []) {
              spans.push(...(scope.spans ?? []));
            }
          }
        } catch {
          // Not JSON: the server was not told http/json; the wait below says so.
        }
        waiters.forEach(wake => wake());
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  /** The first span `matches` accepts, or null after `ms`. */
  const span = (matches, ms) =>
    new Promise(resolve => {
      const look = () => {
        const found = spans.find(matches);
        if (found) {
          clearTimeout(timer);
          waiters.delete(look);
          resolve(found);
        }
      };
      const timer = setTimeout(() => {
        waiters.delete(look);
        resolve(null);
      }, ms);
      waiters.add(look);
      look();
    });
  return { span, names: () => spans.map(s => s.name), close: () => server.close() };
}

/** OTLP/JSON writes ids as hex (the specification's JSON mapping); some exporters, base64. */
function hex(id) {
  if (typeof id !== 'string') return '';
  return /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
}

export async function runTraceparent(url, { step, check }) {
  const port = Number(process.env.MCP_OTLP_PORT);
  check(port > 0, 'MCP_OTLP_PORT is not set');
  const otlp = await step('receiver', () => receiver(port));
  const trace = randomBytes(16).toString('hex');
  const parent = randomBytes(8).toString('hex');
  const client = new Client({ name: 'interop-ts-trace', version: '0.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await step('initialize', () => client.connect(transport));
  await step('echo with a traceparent', async () => {
    const result = await client.request(
      {
        method: 'tools/call',
        params: {
          name: 'echo',
          arguments: { text: 'traced' },
          _meta: { traceparent: `00-${trace}-${parent}-01` },
        },
      },
      CallToolResultSchema,
    );
    check(result.content?.[0]?.text === 'traced', `echo answered ${JSON.stringify(result)}`);
  });
  const span = await step('the server span', () =>
    otlp.span(s => s.name === 'tools/call echo' && hex(s.traceId) === trace, EXPORT_WAIT_MS),
  );
  check(span, `no span "tools/call echo" of trace ${trace} exported; spans: ${JSON.stringify(otlp.names())}`);
  check(hex(span.parentSpanId) === parent, `its parent is ${hex(span.parentSpanId)}, not ${parent}`);
  // SPAN_KIND_SERVER is 2 in OTLP.
  check(span.kind === 2 || span.kind === 'SPAN_KIND_SERVER', `its kind is ${span.kind}`);
  await step('close', async () => {
    await transport.terminateSession();
    await client.close();
  });
  otlp.close();
  return `the server's span "tools/call echo" exported over OTLP/JSON, in the client's trace ${trace} under its span ${parent}`;
}
