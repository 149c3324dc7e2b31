// A server on the TypeScript SDK v2 (@modelcontextprotocol/server) with createMcpHandler:
// 2026-07-28, and in its default legacy mode the 2025 eras too (LEGACY=reject: modern only).
// Host and Origin validation for localhost in front. PORT from the environment.
import { createServer } from 'node:http';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { toNodeHandler, localhostHostValidation, localhostOriginValidation } from '@modelcontextprotocol/node';
import * as z from 'zod';

const handler = createMcpHandler(() => {
  const s = new McpServer({ name: 'ts-v2-probe', version: '1.0.0' });
  s.registerTool('echo', { description: 'Echo text back', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text }] }));
  return s;
}, { legacy: process.env.LEGACY || 'stateless' });
const node = toNodeHandler(handler);
const vh = localhostHostValidation(), vo = localhostOriginValidation();
createServer(async (req, res) => {
  if (new URL(req.url, 'http://x').pathname !== '/mcp') { res.statusCode = 404; return res.end(); }
  if (!vh(req, res) || !vo(req, res)) return;
  await node(req, res);
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('READY'));
