// Preloaded into Node servers that listen on every interface by default
// (@modelcontextprotocol/server-everything calls app.listen(PORT)): pins them to 127.0.0.1,
// so no test ever opens a port beyond loopback.
const net = require('net');
const orig = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]))) {
    const cb = args.find((a) => typeof a === 'function');
    return orig.call(this, { port: Number(args[0]), host: '127.0.0.1' }, cb);
  }
  if (args[0] && typeof args[0] === 'object' && !args[0].path) args[0] = { ...args[0], host: '127.0.0.1' };
  return orig.apply(this, args);
};
