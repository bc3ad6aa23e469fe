'use strict';
// The floor of a durable write on this machine: a bare Node http server that does only the write
// an operation cannot skip, into SQLite in WAL mode with synchronous=FULL, committed in groups
// (every request of one event-loop turn in one transaction, each answered after the commit) —
// no validation, no auth, no framework. It shows how much of a bare server's rate any durable
// implementation can keep here; ours is measured against the same bare baseline.

/** Source for `node -e`: DB_FILE, and WRITE = 'postcard' (insert the JSON body) or 'view' (count a view and log it). */
const FLOOR = `
const http = require('node:http');
const Database = require(process.env.SQLITE_MODULE);
const db = new Database(process.env.DB_FILE);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
// the cheapest schema there is: rowid tables, no secondary index
db.exec("create table postcards (id integer primary key, body text not null, created_at text not null)");
db.exec("create table links (id text primary key, views integer not null, max integer not null)");
db.exec("create table link_events (id integer primary key, link_id text not null, at text not null)");
db.exec("insert into links values ('ml_floor', 0, 1000000000)");
const insertPostcard = db.prepare('insert into postcards (body, created_at) values (?, ?)');
const countView = db.prepare('update links set views = views + 1 where id = ? and views < max returning views');
const logView = db.prepare('insert into link_events (link_id, at) values (?, ?)');
const page = Buffer.from(process.env.PAGE || '', 'base64');
let queue = [];
let scheduled = false;
const flush = () => {
  scheduled = false;
  const group = queue;
  queue = [];
  db.transaction(() => { for (const w of group) w.write(); })();
  for (const w of group) w.answer();
};
const enqueue = (w) => { queue.push(w); if (!scheduled) { scheduled = true; setImmediate(flush); } };
http.createServer((req, res) => {
  if (process.env.WRITE === 'view') {
    return enqueue({
      write: () => { countView.get('ml_floor'); logView.run('ml_floor', new Date().toISOString()); },
      answer: () => { res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }); res.end(page); },
    });
  }
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    let parsed;
    try { parsed = JSON.parse(body); } catch { res.writeHead(400); return res.end(); }
    let id;
    enqueue({
      write: () => { id = 'pc_' + insertPostcard.run(JSON.stringify(parsed), new Date().toISOString()).lastInsertRowid; },
      answer: () => { res.writeHead(202, { 'content-type': 'application/json' }); res.end(JSON.stringify({ id, status: 'received' })); },
    });
  });
}).listen(0, '127.0.0.1', function () { console.log('listening on http://127.0.0.1:' + this.address().port); });
process.on('SIGTERM', () => process.exit(0));
`;

/** Env for the floor server: a fresh database file in `dir`. */
function floorEnv(dir, write, page) {
  return { SQLITE_MODULE: require.resolve('better-sqlite3'), DB_FILE: require('node:path').join(dir, `floor-${write}.db`), WRITE: write, PAGE: page ? page.toString('base64') : '' };
}

module.exports = { FLOOR, floorEnv };
