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

/**
 * The least a complete implementation can do: the same checks and writes as Paperlink, on
 * Paperlink's own database and schema, as raw prepared statements in a bare http server (no
 * framework, no query builder, no events), committed in groups with synchronous=FULL.
 * 'view': the link by token hash with its document's name, the session by cookie hash, then the
 * conditional count, the access-log entry and the PDF grant; the viewer page.
 * 'postcard': the token by prefix and hash (kept once it matched), every rule of the intake
 * (Paperlink's own checkPostcard), the template's required variables, then the insert; 202 with the id.
 * It answers what ours answers: the same page or body, a request id, and a page's security headers.
 * Env: DB_FILE (Paperlink's database), WRITE, PAGE (the viewer page of a view), PAGE_HEADERS, and the modules.
 */
const LEAN = `
const http = require('node:http');
const crypto = require('node:crypto');
const Database = require(process.env.SQLITE_MODULE);
const { checkPostcard } = require(process.env.RULES_MODULE);
const { newId } = require(process.env.IDS_MODULE);
const db = new Database(process.env.DB_FILE);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('busy_timeout = 10000');
const sha = (s) => crypto.createHash('sha256').update(s).digest('hex');
// the same answer as ours: a request id, and a page's security headers
const requestId = () => 'req_' + Math.random().toString(36).slice(2, 12);
const pageHeaders = JSON.parse(process.env.PAGE_HEADERS || '{}');
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
const gone = (res) => { res.writeHead(404); res.end(); };
let handle;
if (process.env.WRITE === 'view') {
  const page = Buffer.from(process.env.PAGE, 'base64').toString('utf8');
  const findLink = db.prepare('select ml.id, d.name from magic_links ml join documents d on d.id = ml.document_id where ml.token_hash = ?');
  const findSession = db.prepare('select email, expires_at from link_sessions where token_hash = ? and link_id = ?');
  const count = db.prepare("update magic_links set views_used = views_used + 1 where id = ? and status in ('active', 'send_failed') and (expires_at is null or expires_at > ?) and (max_views is null or views_used < max_views) returning views_used, max_views");
  const log = db.prepare('insert into link_events (id, link_id, at, kind, outcome, ip, user_agent, email) values (?, ?, ?, ?, ?, ?, ?, ?)');
  const startView = db.prepare('update link_sessions set view_until = ? where token_hash = ? and (view_until is null or view_until <= ?) returning view_until');
  handle = (req, res) => {
    const m = /^\\/l\\/([0-9A-Za-z]{20,100})$/.exec(req.url);
    const cookie = /paperlink_link=([^;]+)/.exec(req.headers.cookie || '');
    const link = m && cookie && findLink.get(sha(m[1]));
    const sessionHash = cookie && sha(cookie[1]);
    const session = link && findSession.get(sessionHash, link.id);
    if (!session || session.expires_at <= new Date().toISOString()) return gone(res);
    let row;
    enqueue({
      write: () => {
        const at = new Date().toISOString();
        if (!startView.get(new Date(Date.now() + 1800000).toISOString(), sessionHash, at)) return;
        row = count.get(link.id, at);
        if (!row) return;
        log.run(newId('ev'), link.id, at, 'viewed', 'ok', req.socket.remoteAddress, (req.headers['user-agent'] || '').slice(0, 300), session.email);
      },
      answer: () => {
        if (!row) return gone(res);
        res.writeHead(200, { ...pageHeaders, 'content-type': 'text/html; charset=utf-8', 'x-request-id': requestId() });
        res.end(page.replace(/View \\d+ of/, 'View ' + row.views_used + ' of'));
      },
    });
  };
} else {
  const findToken = db.prepare("select id, hash from api_keys where prefix = ? and kind = 'postcard' and revoked_at is null");
  const findTemplate = db.prepare('select variables, defaults from templates where id = ?');
  const insert = db.prepare("insert into postcards (id, status, template_id, contact, address, custom, token_id, idempotency_key, document_id, failure_reason, created_at, updated_at) values (?, 'received', ?, ?, ?, ?, ?, null, null, null, ?, ?)");
  const live = new Map();
  handle = (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      let parsed;
      try { parsed = JSON.parse(body); } catch { res.writeHead(400); return res.end(); }
      const presented = String(parsed.api_token);
      const hash = sha(presented);
      let key = live.get(hash);
      if (!key) {
        key = findToken.all(presented.slice(0, 12)).find((r) => crypto.timingSafeEqual(Buffer.from(r.hash, 'hex'), Buffer.from(hash, 'hex')));
        if (key) live.set(hash, key);
      }
      if (!key) { res.writeHead(401); return res.end(); }
      const checked = checkPostcard(parsed);
      const template = checked.ok && findTemplate.get(checked.value.template_id);
      if (!template) { res.writeHead(422); return res.end(); }
      const v = checked.value;
      // every required variable of the template is filled by the request
      const values = Object.assign({}, v.custom, v.address, v.contact);
      const defaults = JSON.parse(template.defaults);
      if (JSON.parse(template.variables).some((name) => !(name in values) && !(name in defaults))) { res.writeHead(422); return res.end(); }
      const id = newId('pc');
      enqueue({
        write: () => { const now = new Date().toISOString(); insert.run(id, v.template_id, JSON.stringify(v.contact), JSON.stringify(v.address), JSON.stringify(v.custom), key.id, now, now); },
        answer: () => { res.writeHead(202, { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId() }); res.end(JSON.stringify({ id, status: 'received' })); },
      });
    });
  };
}
http.createServer((req, res) => handle(req, res)).listen(0, '127.0.0.1', function () { console.log('listening on http://127.0.0.1:' + this.address().port); });
process.on('SIGTERM', () => process.exit(0));
`;

/**
 * Env for the lean server: a copy of Paperlink's database in `dataDir` (taken now, with SQLite's
 * backup, while ours may run), and the modules it shares with Paperlink. A copy of its own: the
 * paired rounds stop one server (SIGSTOP) while the other runs, and a server stopped while it held
 * the shared database's write lock (a heartbeat, a checkpoint) left the other's round without a
 * single answer.
 */
async function leanEnv(dataDir, write, page) {
  const path = require('node:path');
  const dist = path.join(__dirname, '..', 'dist', 'src');
  const { pageHeaders } = require(path.join(dist, 'http', 'headers.js'));
  const SQLite = require('../dist/src/db/sqlite-module').default;
  const copy = path.join(dataDir, 'lean.db');
  const source = new SQLite(path.join(dataDir, 'paperlink.db'));
  await source.backup(copy);
  source.close();
  return {
    SQLITE_MODULE: require.resolve(require('../dist/src/db/sqlite-module').sqliteModuleName),
    RULES_MODULE: path.join(dist, 'postcards', 'rules.js'),
    IDS_MODULE: path.join(dist, 'ids.js'),
    DB_FILE: copy,
    WRITE: write,
    PAGE: page ? page.toString('base64') : '',
    PAGE_HEADERS: JSON.stringify(pageHeaders('recipient')),
  };
}

/** Env for the floor server: a fresh database file in `dir`. */
function floorEnv(dir, write, page) {
  return {
    SQLITE_MODULE: require.resolve(require('../dist/src/db/sqlite-module').sqliteModuleName),
    DB_FILE: require('node:path').join(dir, `floor-${write}.db`),
    WRITE: write,
    PAGE: page ? page.toString('base64') : '',
  };
}

module.exports = { FLOOR, floorEnv, LEAN, leanEnv };
