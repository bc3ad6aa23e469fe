/**
 * The few static files the pages use, kept as strings so they ship inside the compiled package
 * and never come from the internet. pdf.js itself is served from the installed pdfjs-dist.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyPluginAsync } from 'fastify';

const PDFJS = path.dirname(require.resolve('pdfjs-dist/package.json'));
/** The template editor's bundle (gulpfile.js editor): beside the compiled web app, or in dist/ when this file runs as TypeScript (the tests). */
const EDITOR = __filename.endsWith('.ts')
  ? path.resolve(__dirname, '../../dist/src/web/editor.js')
  : path.join(__dirname, '../web/editor.js');

/**
 * Draws the PDF named by `#pages[data-pdf]` with pdf.js, one canvas per page, and reports in
 * `#status`. Used by the recipient's viewer and the web app's previews.
 */
/** Times in the reader's own zone, as the browser knows it: every <time datetime> the server wrote in UTC (kept as the tooltip). */
const LOCAL_TIMES = `for (const t of document.querySelectorAll('time[datetime]')) {
  const d = new Date(t.dateTime);
  // the year only when it is not this one
  const year = d.getFullYear() === new Date().getFullYear() ? {} : { year: 'numeric' };
  if (!Number.isNaN(d.getTime())) { t.title = t.textContent; t.textContent = d.toLocaleString(undefined, { ...year, month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZoneName: 'short' }); }
}
`;

const VIEWER = `${LOCAL_TIMES}import * as pdfjs from '/assets/pdfjs/pdf.min.mjs';
pdfjs.GlobalWorkerOptions.workerSrc = '/assets/pdfjs/pdf.worker.min.mjs';
const holder = document.getElementById('pages');
const status = document.getElementById('status');
const plural = (n) => n + (n === 1 ? ' page' : ' pages');
/** The page in the middle of the window (0 while none is there). */
const pageAtMiddle = () => {
  const middle = window.innerHeight / 2;
  for (const el of holder.querySelectorAll('[data-page]')) {
    const r = el.getBoundingClientRect();
    if (r.top <= middle && r.bottom >= middle) return Number(el.dataset.page);
  }
  return 0;
};
// page analytics: which page is in the middle of the window, and for how long while the tab is
// shown; reported every 15 s and when the page is left (the server bounds what it takes)
if (holder.dataset.report) {
  const url = holder.dataset.report;
  const times = {};
  let current = 0;
  let last = performance.now();
  const tick = () => {
    const now = performance.now();
    if (current && document.visibilityState === 'visible') times[current] = (times[current] || 0) + (now - last);
    last = now;
    current = pageAtMiddle();
  };
  const flush = (leaving) => {
    tick();
    const pages = {};
    for (const [page, ms] of Object.entries(times)) if (ms >= 1) pages[page] = Math.round(ms);
    for (const page of Object.keys(times)) delete times[page];
    if (!Object.keys(pages).length) return;
    const body = JSON.stringify({ pages });
    if (leaving && navigator.sendBeacon) navigator.sendBeacon(url, new Blob([body], { type: 'application/json' }));
    else fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, keepalive: true }).catch(() => {});
  };
  setInterval(tick, 1000);
  setInterval(() => flush(false), 15000);
  addEventListener('pagehide', () => flush(true));
  document.addEventListener('visibilitychange', () => { if (document.visibilityState === 'hidden') flush(true); else { last = performance.now(); } });
}
// the controls: page navigation, zoom, thumbnails and their keys (the page works without them;
// the web app's previews have none)
const controls = document.querySelector('.controls');
const ui = controls ? controlsOf() : { counted() {}, shown() {} };
function controlsOf() {
  controls.hidden = false;
  const thumbs = document.getElementById('thumbs');
  const number = document.getElementById('page-number');
  const zoomShown = document.getElementById('zoom');
  const toggle = document.getElementById('thumbs-toggle');
  const ZOOMS = [0.5, 0.75, 1, 1.25, 1.5, 2, 3];
  let count = 0;
  let shownPage = 1;
  let zoom = 1;
  const pageEl = (n) => holder.querySelector('[data-page="' + n + '"]');
  const mark = (n) => {
    shownPage = n;
    number.value = String(n);
    document.getElementById('prev').disabled = n <= 1;
    document.getElementById('next').disabled = n >= count;
    for (const b of thumbs.children) {
      if (Number(b.dataset.page) === n) b.setAttribute('aria-current', 'true');
      else b.removeAttribute('aria-current');
    }
  };
  // the page last gone to stays the one shown while it is on the screen: the last pages of a
  // document cannot scroll to the top, and the page in the middle of the window may be another
  let chosen = 0;
  const onScreen = (n) => {
    const r = pageEl(n)?.getBoundingClientRect();
    return Boolean(r) && r.bottom > 0 && r.top < window.innerHeight;
  };
  const go = (n) => {
    if (!count) return;
    n = Math.min(Math.max(1, Math.round(n) || 1), count);
    chosen = n;
    const el = pageEl(n);
    if (el) el.scrollIntoView({ block: 'start' });
    mark(n);
  };
  const setZoom = (z) => {
    const keep = shownPage;
    zoom = Math.min(Math.max(z, ZOOMS[0]), ZOOMS[ZOOMS.length - 1]);
    holder.style.setProperty('--zoom', String(zoom));
    zoomShown.textContent = Math.round(zoom * 100) + '%';
    go(keep);
  };
  // the next step of ZOOMS up or down from where the zoom is
  const zoomStep = (by) => {
    const i = by > 0 ? ZOOMS.findIndex((z) => z > zoom + 1e-9) : ZOOMS.findLastIndex((z) => z < zoom - 1e-9);
    if (i >= 0) setZoom(ZOOMS[i]);
  };
  const narrow = window.matchMedia('(max-width: 700px)');
  // on a phone the thumbnails are a drawer over the page: focus goes into it, and back when it closes
  const showThumbs = (open) => {
    thumbs.hidden = !open;
    toggle.setAttribute('aria-expanded', String(open));
    if (!narrow.matches) return;
    if (open) (thumbs.querySelector('[aria-current]') || thumbs.firstElementChild || thumbs).focus();
    else if (thumbs.contains(document.activeElement) || document.activeElement === document.body) toggle.focus();
  };
  /** A page is shown: the page count knows it, and its thumbnail is drawn from it. */
  const shown = (n, source, width, height) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.dataset.page = String(n);
    b.setAttribute('aria-label', 'Page ' + n);
    const c = document.createElement('canvas');
    c.width = 120;
    c.height = Math.max(1, Math.round((120 * height) / width));
    c.getContext('2d').drawImage(source, 0, 0, c.width, c.height);
    b.append(c, String(n));
    b.addEventListener('click', () => { go(n); if (narrow.matches) showThumbs(false); });
    const after = [...thumbs.children].find((t) => Number(t.dataset.page) > n);
    thumbs.insertBefore(b, after || null);
    if (n === shownPage) mark(n);
  };
  const counted = (n) => {
    count = n;
    number.max = String(n);
    document.getElementById('page-count').textContent = 'of ' + n;
    mark(1);
  };
  showThumbs(!narrow.matches);
  toggle.addEventListener('click', () => showThumbs(thumbs.hidden));
  document.getElementById('prev').addEventListener('click', () => go(shownPage - 1));
  document.getElementById('next').addEventListener('click', () => go(shownPage + 1));
  number.addEventListener('change', () => go(Number(number.value)));
  document.getElementById('zoom-in').addEventListener('click', () => zoomStep(1));
  document.getElementById('zoom-out').addEventListener('click', () => zoomStep(-1));
  document.getElementById('fit').addEventListener('click', () => setZoom(1));
  let pending = false;
  addEventListener('scroll', () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      if (chosen && onScreen(chosen)) return;
      chosen = 0;
      const n = pageAtMiddle();
      if (n && n !== shownPage) mark(n);
    });
  }, { passive: true });
  // the drawer closes with Escape, and with a tap beside it
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && narrow.matches && !thumbs.hidden) showThumbs(false); });
  document.addEventListener('click', (e) => {
    if (narrow.matches && !thumbs.hidden && !thumbs.contains(e.target) && !toggle.contains(e.target)) showThumbs(false);
  });
  // the keys work where the focus is on the document (its pages, which a click focuses, or the
  // thumbnails), so that they never take a key from anything else (WCAG 2.1.4); the arrows pan a
  // page zoomed wider than the window instead
  document.querySelector('.viewer').addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const panning = holder.scrollWidth > holder.clientWidth;
    const act = {
      ArrowRight: !panning && (() => go(shownPage + 1)),
      ArrowLeft: !panning && (() => go(shownPage - 1)),
      '+': () => zoomStep(1), '=': () => zoomStep(1), '-': () => zoomStep(-1), '0': () => setZoom(1),
    }[e.key];
    if (act) { e.preventDefault(); act(); }
  });
  return { counted, shown };
}
if (holder.dataset.images) {
  // a link without downloads: the server draws each page as an image; no PDF reaches the browser
  const total = Number(holder.dataset.count);
  ui.counted(total);
  const loads = [];
  for (let n = 1; n <= total; n++) {
    const img = document.createElement('img');
    img.alt = 'Page ' + n + ' of ' + total;
    img.dataset.page = String(n);
    img.decoding = 'async';
    loads.push(new Promise((resolve, reject) => {
      img.onload = () => { ui.shown(n, img, img.naturalWidth, img.naturalHeight); resolve(); };
      img.onerror = reject;
    }));
    img.src = holder.dataset.images + '/' + n;
    holder.appendChild(img);
  }
  Promise.all(loads).then(() => {
    status.textContent = plural(total);
    document.body.dataset.rendered = 'true';
  }, () => { status.textContent = 'The document could not be shown. Reload the page to try again.'; });
} else try {
  const doc = await pdfjs.getDocument({ url: holder.dataset.pdf, withCredentials: true }).promise;
  ui.counted(doc.numPages);
  for (let n = 1; n <= doc.numPages; n++) {
    const p = await doc.getPage(n);
    const viewport = p.getViewport({ scale: 2 });
    const canvas = document.createElement('canvas');
    canvas.width = viewport.width; canvas.height = viewport.height;
    canvas.setAttribute('role', 'img');
    canvas.setAttribute('aria-label', 'Page ' + n + ' of ' + doc.numPages);
    canvas.dataset.page = String(n);
    holder.appendChild(canvas);
    await p.render({ canvasContext: canvas.getContext('2d'), viewport }).promise;
    ui.shown(n, canvas, canvas.width, canvas.height);
  }
  status.textContent = plural(doc.numPages);
  document.body.dataset.rendered = 'true';
} catch (e) {
  status.textContent = 'The document could not be shown here. Use the download button.';
}
`;

/** The web app's behaviour: copy buttons, confirmations, fieldsets that follow their checkbox, auto-submitting pickers. All optional: every page works without it. */
const APP_JS = `${LOCAL_TIMES}function copy(text) {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  const area = document.createElement('textarea');
  area.value = text; area.setAttribute('readonly', ''); area.style.position = 'fixed'; area.style.opacity = '0';
  document.body.appendChild(area); area.select();
  try { document.execCommand('copy'); } finally { area.remove(); }
  return Promise.resolve();
}
document.addEventListener('click', (e) => {
  const button = e.target.closest('[data-copy]');
  if (!button) return;
  copy(button.dataset.copy).then(() => {
    const label = button.textContent;
    button.textContent = 'Copied';
    button.dataset.copied = 'true';
    const live = document.getElementById('live');
    if (live) live.textContent = 'Copied to the clipboard';
    setTimeout(() => { button.textContent = label; delete button.dataset.copied; }, 1500);
  });
});
document.addEventListener('submit', (e) => {
  const message = e.target.dataset.confirm;
  if (message && !window.confirm(message)) e.preventDefault();
});
for (const box of document.querySelectorAll('input[data-toggles]')) {
  const target = document.getElementById(box.dataset.toggles);
  const sync = () => { target.disabled = !box.checked; target.classList.toggle('off', !box.checked); };
  box.addEventListener('change', sync);
  sync();
}
for (const select of document.querySelectorAll('select[data-autosubmit]')) {
  select.addEventListener('change', () => select.form.requestSubmit());
}
`;

const CSS = `:root { --accent: #1a63d6; --ink: #16181d; --muted: #5b6270; --line: #e2e5ea; --bg: #f5f6f8; --card: #fff; --danger: #b42318; --ok: #067647; --warn: #b54708; color-scheme: light; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", sans-serif; color: var(--ink); background: var(--bg); }
a { color: var(--accent); }
.skip { position: absolute; left: -999px; top: 8px; background: #fff; padding: 8px 12px; z-index: 10; }
.skip:focus { left: 8px; }
.shell { display: grid; grid-template-columns: 232px minmax(0, 1fr); min-height: 100vh; }
.side { background: #11151c; color: #c9d1dc; padding: 20px 14px; display: flex; flex-direction: column; gap: 4px; }
.brand { display: flex; align-items: center; gap: 10px; color: #fff; font-weight: 700; font-size: 1.05rem; padding: 4px 10px 18px; text-decoration: none; }
.brand svg { flex: none; }
.side nav { display: flex; flex-direction: column; gap: 2px; }
.side nav a { color: #c9d1dc; text-decoration: none; padding: 8px 10px; border-radius: 6px; font-weight: 500; }
.side nav a:hover { background: #1c222c; color: #fff; }
.side nav a[aria-current="page"] { background: var(--accent); color: #fff; }
.side .muted, .side .hide-sm, .who span { color: #a7b0bd; }
.who { margin-top: auto; padding: 12px 10px 0; border-top: 1px solid #262d38; font-size: .85rem; }
.who strong { display: block; color: #fff; font-weight: 600; overflow: hidden; text-overflow: ellipsis; }
.who button { background: none; border: 1px solid #3a4250; color: #c9d1dc; margin-top: 8px; padding: 5px 10px; font-size: .85rem; }
main { padding: 28px 32px 48px; max-width: 1180px; width: 100%; }
.head { display: flex; align-items: flex-start; justify-content: space-between; gap: 16px; flex-wrap: wrap; margin-bottom: 20px; }
h1 { font-size: 1.5rem; line-height: 1.25; margin: 0; letter-spacing: -.01em; }
h2 { font-size: 1.1rem; margin: 0 0 12px; }
h3 { font-size: .95rem; margin: 16px 0 8px; }
.sub { color: var(--muted); margin: 4px 0 0; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 20px; margin-bottom: 20px; box-shadow: 0 1px 2px rgba(16,24,40,.04); }
.card > h2:first-child { margin-top: 0; }
.grid2 { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 20px; align-items: start; }
#editor #pages canvas { display: block; border: 1px solid var(--line); margin-bottom: 12px; }
.named { display: flex; gap: 12px; align-items: flex-start; }
ul.gallery { list-style: none; padding: 0; margin: 0; display: grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); gap: 20px; }
ul.gallery li { display: flex; flex-direction: column; gap: 8px; }
ul.gallery img { width: 100%; aspect-ratio: 3 / 4; object-fit: contain; object-position: top; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
img.thumb { flex: none; width: 56px; height: 72px; object-fit: contain; object-position: top; border: 1px solid var(--line); border-radius: 4px; background: #fff; }
table.diff td { padding: 0 8px; white-space: pre-wrap; border: 0; }
table.diff .diff-added { background: #e6f4ea; }
table.diff .diff-removed { background: #fde8e8; }
table { width: 100%; border-collapse: collapse; font-size: .92rem; }
th { text-align: left; font-weight: 600; color: var(--muted); font-size: .78rem; text-transform: uppercase; letter-spacing: .04em; padding: 8px 10px; border-bottom: 1px solid var(--line); }
td { padding: 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
tr:last-child td { border-bottom: 0; }
td time { white-space: nowrap; }
td .button, td button { padding: 5px 10px; font-size: .85rem; }
td .actions { flex-wrap: nowrap; }
.id code { word-break: normal; white-space: nowrap; }
.scroll { overflow-x: auto; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .86em; }
code { background: #f0f2f5; padding: 2px 6px; border-radius: 4px; word-break: break-all; }
.id { display: inline-flex; align-items: center; gap: 6px; flex-wrap: wrap; }
.badge { display: inline-block; padding: 2px 9px; border-radius: 999px; font-size: .78rem; font-weight: 600; background: #eef0f3; color: #344054; white-space: nowrap; }
.badge.active, .badge.rendered, .badge.delivered { background: #e7f6ec; color: var(--ok); }
.badge.send_failed, .badge.received, .badge.pending { background: #fef4e6; color: var(--warn); }
.badge.revoked, .badge.failed { background: #fdecea; color: var(--danger); }
.badge.expired { background: #eef0f3; color: #475467; }
.chip { display: inline-block; background: #f0f2f5; border-radius: 4px; padding: 1px 6px; margin: 0 4px 4px 0; font-size: .8rem; }
.muted { color: var(--muted); }
.small { font-size: .85rem; }
button, .button { display: inline-flex; align-items: center; gap: 6px; font: inherit; font-weight: 600; padding: 8px 14px; border-radius: 7px; border: 1px solid transparent; background: var(--accent); color: #fff; cursor: pointer; text-decoration: none; line-height: 1.3; }
button:hover, .button:hover { filter: brightness(.95); }
.button.secondary, button.secondary { background: #fff; color: var(--ink); border-color: #cfd4dc; }
button.danger { background: #fff; color: var(--danger); border-color: #f1b5ae; }
button.link { background: none; border: 0; color: var(--accent); padding: 0; font-weight: 500; }
button.copy { background: #fff; color: var(--ink); border: 1px solid #cfd4dc; padding: 2px 8px; font-size: .8rem; font-weight: 500; }
button.copy[data-copied] { color: var(--ok); border-color: var(--ok); }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
form.inline { display: inline; }
.actions { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; }
label { display: block; font-weight: 600; margin-bottom: 4px; font-size: .9rem; }
.field { margin-bottom: 14px; }
.hint { color: var(--muted); font-size: .82rem; margin-top: 3px; }
input[type=text], input[type=email], input[type=password], input[type=url], input[type=number], input[type=search], select, textarea { width: 100%; font: inherit; padding: 8px 10px; border: 1px solid #c4cad3; border-radius: 7px; background: #fff; color: var(--ink); }
textarea { min-height: 42px; resize: vertical; }
input[type=color] { width: 56px; height: 38px; padding: 2px; border: 1px solid #c4cad3; border-radius: 7px; background: #fff; }
[aria-invalid="true"] { border-color: var(--danger) !important; }
.err { color: var(--danger); font-size: .85rem; margin-top: 3px; font-weight: 500; }
.row { display: grid; grid-template-columns: repeat(auto-fit, minmax(180px, 1fr)); gap: 12px; }
fieldset { border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px 4px; margin: 0 0 16px; }
fieldset.off { opacity: .55; }
legend { font-weight: 700; padding: 0 6px; }
.check { display: flex; align-items: center; gap: 8px; font-weight: 600; margin-bottom: 10px; }
.check input { width: 18px; height: 18px; }
.choices { display: flex; gap: 16px; flex-wrap: wrap; }
.choices label { font-weight: 500; display: flex; align-items: center; gap: 6px; margin: 0; }
.notice { border-radius: 8px; padding: 12px 14px; margin-bottom: 18px; border: 1px solid; }
.notice.ok { background: #ecfdf3; border-color: #abefc6; color: #054f31; }
.notice.error { background: #fef3f2; border-color: #fecdca; color: #7a271a; }
.notice.secret, .notice.warn { background: #fffaeb; border-color: #fedf89; color: #4e1d09; }
.notice ul { margin: 6px 0 0; padding-left: 20px; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.gap-below { margin-bottom: 14px; }
.filter { display: flex; gap: 8px; align-items: center; }
.filter input { max-width: 320px; }
.secret-value { display: flex; gap: 8px; align-items: center; margin-top: 8px; flex-wrap: wrap; }
.secret-value code { font-size: .95rem; background: #fff; border: 1px solid #fedf89; padding: 6px 8px; }
.tabs { display: flex; gap: 4px; border-bottom: 1px solid var(--line); margin-bottom: 16px; flex-wrap: wrap; }
.tabs a { padding: 8px 12px; text-decoration: none; color: var(--muted); font-weight: 600; border-bottom: 2px solid transparent; margin-bottom: -1px; }
.tabs a[aria-current="page"] { color: var(--accent); border-color: var(--accent); }
.empty { text-align: center; padding: 32px 16px; color: var(--muted); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 6px 16px; margin: 0; font-size: .92rem; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
.link-card { border: 1px solid var(--line); border-radius: 8px; padding: 14px; margin-bottom: 12px; }
.meter { display: block; width: 100%; height: 6px; border: 0; border-radius: 3px; overflow: hidden; margin: 6px 0 2px; background: #eef0f3; -webkit-appearance: none; appearance: none; }
.meter::-webkit-progress-bar { background: #eef0f3; }
.meter::-webkit-progress-value { background: var(--accent); }
.meter::-moz-progress-bar { background: var(--accent); }
.page-chart { display: block; max-width: 100%; height: auto; margin-top: 6px; color: var(--accent); }
.page-chart text { fill: var(--muted); }
.gap-above { margin-top: 12px; }
.gap-above-l { margin-top: 24px; }
.row.bottom { align-items: end; }
.actions.spread { justify-content: space-between; }
#pages { background: #e9ecf0; border-radius: 8px; padding: 12px; min-height: 200px; }
#pages canvas { display: block; width: 100%; height: auto; margin: 0 auto 12px; background: #fff; box-shadow: 0 1px 4px rgba(0,0,0,.15); }
.pager { display: flex; justify-content: flex-end; margin-top: 12px; }
.signin { min-height: 100vh; display: grid; place-items: center; padding: 16px; }
.signin .card { width: 100%; max-width: 420px; padding: 28px; }
.signin .brand { color: var(--ink); padding: 0 0 16px; }
@media (max-width: 820px) {
  .shell { grid-template-columns: minmax(0, 1fr); }
  .side { flex-direction: row; flex-wrap: wrap; align-items: center; padding: 10px 12px; gap: 8px; }
  .brand { padding: 4px 6px; }
  .side nav { flex-direction: row; overflow-x: auto; width: 100%; order: 3; }
  .side nav a { white-space: nowrap; }
  .who { margin: 0 0 0 auto; padding: 0; border: 0; display: flex; align-items: center; gap: 8px; }
  .who strong { display: none; }
  .who button { margin: 0; }
  main { padding: 18px 14px 40px; }
  .grid2 { grid-template-columns: 1fr; }
  .hide-sm { display: none; }
  /* a table of many columns becomes one block per row, each cell named by its column */
  .stack thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  .stack tbody tr { display: block; padding: 8px 0; border-bottom: 1px solid var(--line); position: relative; }
  .stack tbody tr:last-child { border-bottom: 0; }
  .stack td { display: block; border: 0; padding: 3px 10px; }
  .stack td.hide-sm { display: none; }
  .stack td:first-child:not([data-label]) { position: absolute; right: 0; top: 8px; }
  .stack td[data-label]::before { content: attr(data-label); display: inline-block; min-width: 80px; color: var(--muted); font-size: .78rem; font-weight: 600; text-transform: uppercase; letter-spacing: .04em; }
}
`;

/** Paperlink's mark: the web app's logo and its favicon. */
export const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1F6FEB"/><path d="M10 7h8l6 6v12a1 1 0 0 1-1 1H10a1 1 0 0 1-1-1V8a1 1 0 0 1 1-1z" fill="#fff"/><path d="M18 7v6h6" fill="#cfe0ff"/><path d="M12.5 19.5l2.5-2.5m-1 4a2 2 0 0 1-2.8-2.8l1.4-1.4m4.2 1.4l1.4-1.4a2 2 0 0 0-2.8-2.8" stroke="#1F6FEB" stroke-width="1.6" fill="none" stroke-linecap="round"/></svg>`;

const STATIC: Record<string, { type: string; body: string | (() => fs.ReadStream) }> = {
  '/assets/viewer.js': { type: 'text/javascript; charset=utf-8', body: VIEWER },
  '/assets/app.js': { type: 'text/javascript; charset=utf-8', body: APP_JS },
  '/assets/app.css': { type: 'text/css; charset=utf-8', body: CSS },
  '/assets/icon.svg': { type: 'image/svg+xml', body: LOGO_SVG },
  '/assets/editor.js': { type: 'text/javascript; charset=utf-8', body: () => fs.createReadStream(EDITOR) },
  '/assets/pdfjs/pdf.min.mjs': {
    type: 'text/javascript; charset=utf-8',
    body: () => fs.createReadStream(path.join(PDFJS, 'build', 'pdf.min.mjs')),
  },
  '/assets/pdfjs/pdf.worker.min.mjs': {
    type: 'text/javascript; charset=utf-8',
    body: () => fs.createReadStream(path.join(PDFJS, 'build', 'pdf.worker.min.mjs')),
  },
};

export const assetRoutes: FastifyPluginAsync = async (app) => {
  for (const [url, file] of Object.entries(STATIC)) {
    app.get(url, async (_req, reply) =>
      reply
        .type(file.type)
        .header('Cache-Control', 'public, max-age=3600')
        .send(typeof file.body === 'string' ? file.body : file.body()),
    );
  }
};
