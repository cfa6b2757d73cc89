// The TypeScript SDK v2's server (`@modelcontextprotocol/server`), for the "our client -> their
// server" pairs on both eras of the protocol.
//
//   node server.mjs
//
// Listens on 127.0.0.1 with a free port and prints `listening on http://127.0.0.1:PORT/mcp` as
// its first line. It serves MCP the way v2 does by default (`createMcpHandler`): 2026-07-28
// per request, and 2025-era traffic statelessly (each request by a fresh instance, no session,
// GET and DELETE answered 405). Tools: `echo {text}` returns the text; `progress {steps,
// delay_ms}` sends `steps` progress notifications when the request has a progress token, then
// returns "done"; `region {region}` declares `region` mirrored (`x-mcp-header: Region`, SEP-2243)
// and returns the `Mcp-Param-Region` header it was called with, as it came (the SDK itself
// neither writes nor checks those headers). SIGINT or SIGTERM stops it; so does the hard limit below, so a forgotten
// server cannot linger.

import { createServer } from 'node:http';
import { Readable } from 'node:stream';

import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';

/** A peer for a test run, not a service: it exits on its own after this long. */
const MAX_LIFETIME_MS = 10 * 60_000;

if (process.argv.length > 2) {
  console.error(`unknown argument ${process.argv[2]}; usage: node server.mjs`);
  process.exit(2);
}

function mcpServer() {
  const server = new McpServer({ name: 'interop-ts2-server', version: '0.0.0' });
  server.registerTool(
    'echo',
    { description: 'Returns the text it is given.', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
  server.registerTool(
    'progress',
    {
      description: 'Sends progress notifications, then returns "done".',
      inputSchema: z.object({ steps: z.number().int(), delay_ms: z.number().int().optional() }),
    },
    async ({ steps, delay_ms: delay }, ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken;
      if (progressToken !== undefined) {
        for (let progress = 1; progress <= steps; progress++) {
          await ctx.mcpReq.notify({
            method: 'notifications/progress',
            params: { progressToken, progress, total: steps },
          });
          if (delay) {
            await new Promise(resolve => setTimeout(resolve, delay));
          }
        }
      }
      return { content: [{ type: 'text', text: 'done' }] };
    },
  );
  server.registerTool(
    'region',
    {
      description: 'Returns the Mcp-Param-Region header of its call, as it came.',
      inputSchema: z.object({ region: z.string().meta({ 'x-mcp-header': 'Region' }) }),
    },
    async (_args, ctx) => {
      const header = ctx.http?.req?.headers.get('mcp-param-region') ?? '(none)';
      return { content: [{ type: 'text', text: header }] };
    },
  );
  return server;
}

const handler = createMcpHandler(() => mcpServer());

/** Node's request as the web-standard `Request` the v2 handler serves. */
function toRequest(req) {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    for (const one of Array.isArray(value) ? value : [value]) {
      headers.append(name, one);
    }
  }
  const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : Readable.toWeb(req);
  return new Request(`http://${req.headers.host}${req.url}`, {
    method: req.method,
    headers,
    body,
    duplex: 'half',
  });
}

/** Writes a web-standard `Response` to Node's response, streaming its body as it comes. */
async function send(response, res) {
  const headers = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  res.writeHead(response.status, headers);
  if (response.body) {
    for await (const chunk of response.body) {
      res.write(chunk);
    }
  }
  res.end();
}

const http = createServer(async (req, res) => {
  try {
    if (new URL(req.url, 'http://localhost').pathname !== '/mcp') {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found: MCP is served at /mcp\n');
      return;
    }
    await send(await handler.fetch(toRequest(req)), res);
  } catch (error) {
    console.error('request failed:', error);
    if (!res.headersSent) {
      res.writeHead(500, { 'content-type': 'text/plain' });
    }
    res.end();
  }
});

http.listen(0, '127.0.0.1', () => {
  // The first line, which the xtask waits for.
  console.log(`listening on http://127.0.0.1:${http.address().port}/mcp`);
});

async function stop() {
  http.close();
  await handler.close();
  process.exit(0);
}

process.on('SIGINT', stop);
process.on('SIGTERM', stop);
setTimeout(() => {
  console.error(`stopping after ${MAX_LIFETIME_MS / 60_000} minutes`);
  process.exit(0);
}, MAX_LIFETIME_MS).unref();
