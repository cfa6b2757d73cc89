// The TypeScript SDK's Streamable HTTP server, for the "our client -> their server" pairs.
//
//   node server.mjs [--event-store] [--json-response] [--stateless]
//
// Listens on 127.0.0.1 with a free port and prints `listening on http://127.0.0.1:PORT/mcp` as
// its first line. Tools: `echo {text}` returns the text; `progress {steps, delay_ms}` sends
// `steps` progress notifications when the request has a progress token, then returns "done".
// `--event-store` makes streams resumable with the SDK's example InMemoryEventStore.
// SIGINT or SIGTERM stops it; so does the hard limit below, so a forgotten server cannot linger.

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/** A peer for a test run, not a service: it exits on its own after this long. */
const MAX_LIFETIME_MS = 10 * 60_000;
const FLAGS = ['--event-store', '--json-response', '--stateless'];

const args = process.argv.slice(2);
const unknown = args.filter(arg => !FLAGS.includes(arg));
if (unknown.length > 0) {
  console.error(`unknown argument ${unknown[0]}; usage: node server.mjs [${FLAGS.join('] [')}]`);
  process.exit(2);
}
const eventStore = args.includes('--event-store');
const jsonResponse = args.includes('--json-response');
const stateless = args.includes('--stateless');

function mcpServer() {
  const server = new McpServer({ name: 'interop-ts-server', version: '0.0.0' });
  server.registerTool(
    'echo',
    { description: 'Returns the text it is given.', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
  server.registerTool(
    'progress',
    {
      description: 'Sends progress notifications, then returns "done".',
      inputSchema: { steps: z.number().int().min(0).max(10_000).default(3), delay_ms: z.number().int().min(0).max(60_000).default(0) },
    },
    async ({ steps, delay_ms: delay }, extra) => {
      const progressToken = extra._meta?.progressToken;
      if (progressToken !== undefined) {
        for (let progress = 1; progress <= steps; progress++) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress, total: steps },
          });
          if (delay > 0) {
            await new Promise(resolve => setTimeout(resolve, delay));
          }
        }
      }
      return { content: [{ type: 'text', text: 'done' }] };
    },
  );
  return server;
}

function transportOptions() {
  return {
    sessionIdGenerator: stateless ? undefined : () => randomUUID(),
    enableJsonResponse: jsonResponse,
    eventStore: eventStore ? new InMemoryEventStore() : undefined,
  };
}

/** Live sessions by id. */
const sessions = new Map();

function jsonError(res, status, message) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) {
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

/** A new session: its own transport and server, registered once the SDK has minted the id. */
async function startSession() {
  const transport = new StreamableHTTPServerTransport({
    ...transportOptions(),
    onsessioninitialized: id => sessions.set(id, transport),
  });
  transport.onclose = () => {
    if (transport.sessionId) {
      sessions.delete(transport.sessionId);
    }
  };
  await mcpServer().connect(transport);
  return transport;
}

async function handle(req, res) {
  if (new URL(req.url, 'http://localhost').pathname !== '/mcp') {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found: MCP is served at /mcp\n');
    return;
  }
  let body;
  if (req.method === 'POST') {
    try {
      body = await readJson(req);
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32700, message: 'parse error' }, id: null }));
      return;
    }
  }
  if (stateless) {
    // The SDK's stateless pattern: a fresh server and transport for every request.
    const transport = new StreamableHTTPServerTransport(transportOptions());
    const server = mcpServer();
    res.on('close', () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
    return;
  }
  const id = req.headers['mcp-session-id'];
  let transport = id ? sessions.get(id) : undefined;
  if (!transport) {
    if (id) {
      jsonError(res, 404, `session not found: ${id}`);
      return;
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      jsonError(res, 400, 'bad request: no session id, and not an initialize request');
      return;
    }
    transport = await startSession();
  }
  await transport.handleRequest(req, res, body);
}

const http = createServer((req, res) => {
  handle(req, res).catch(error => {
    console.error('error handling a request:', error);
    if (!res.headersSent) {
      jsonError(res, 500, 'internal server error');
    } else {
      res.end();
    }
  });
});

async function stop() {
  for (const transport of sessions.values()) {
    await transport.close().catch(() => {});
  }
  http.close();
  process.exit(0);
}

process.on('SIGINT', stop);
process.on('SIGTERM', stop);
setTimeout(() => {
  console.error(`stopping after ${MAX_LIFETIME_MS / 60_000} minutes`);
  stop();
}, MAX_LIFETIME_MS).unref();

http.listen(0, '127.0.0.1', () => {
  // The first line, which scripts wait for.
  console.log(`listening on http://127.0.0.1:${http.address().port}/mcp`);
});
