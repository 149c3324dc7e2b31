// A Streamable HTTP server on the TypeScript SDK v1 (@modelcontextprotocol/sdk), stateless
// with JSON responses, one tool. PORT from the environment; binds 127.0.0.1.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import * as z from 'zod';

const app = createMcpExpressApp({ host: '127.0.0.1' });
// LOG_REQUESTS=1: one line per request on stdout, so a benchmark counts requests at the server.
if (process.env.LOG_REQUESTS) app.use((req, _res, next) => { console.log(`REQ ${req.method} ${req.path}`); next(); });
app.post('/mcp', async (req, res) => {
  const server = new McpServer({ name: 'ts-v1-probe', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echo text back', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => { transport.close(); server.close(); });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
app.get('/mcp', (req, res) => res.status(405).end());
app.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('READY'));
