/** A webhook receiver for tests: records every request and answers as the test says. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  event: {
    id: string;
    type: string;
    created_at: string;
    data: { object: Record<string, unknown> } & Record<string, unknown>;
  };
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** What to answer: a status code (now or later), or 'hang' to never answer. Default 200. */
  respond: (r: Received) => number | 'hang' | Promise<number>;
  /** Requests read and not answered yet. */
  open: Set<Received>;
  /** Stops listening (the port is kept for start()). */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
}

export async function startReceiver(port = 0): Promise<Receiver> {
  const hanging = new Set<http.ServerResponse>();
  let server: http.Server;
  const r: Receiver = {
    url: '',
    port,
    received: [],
    open: new Set(),
    respond: () => 200,
    stop: async () => {
      for (const res of hanging) res.destroy();
      hanging.clear();
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    },
    start: async () => {
      server = http.createServer((req, res) => {
        let body = '';
        req.setEncoding('utf8');
        req.on('data', (c: string) => (body += c));
        req.on('end', () => {
          const rec: Received = { headers: req.headers, body, event: JSON.parse(body) as Received['event'] };
          r.received.push(rec);
          const answer = r.respond(rec);
          if (answer === 'hang') {
            hanging.add(res);
            return;
          }
          r.open.add(rec);
          res.on('close', () => r.open.delete(rec));
          void Promise.resolve(answer).then((status) => res.writeHead(status).end());
        });
      });
      await new Promise<void>((done) => server.listen(r.port, '127.0.0.1', done));
      r.port = (server.address() as AddressInfo).port;
      r.url = `http://127.0.0.1:${r.port}/hooks`;
    },
  };
  await r.start();
  return r;
}
