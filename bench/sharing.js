// What a Magic Link viewing costs the server (docs/magic-links.md, "Watermarks and downloads"): the
// PDF with a watermark drawn for the viewing session, and one page drawn as an image when downloads
// are off. Beside their floors in the same run, measured in turns: pdf-lib reading and writing the
// same PDF unchanged (the floor of any change to a PDF; serving it as stored costs nothing), and
// pdf.js drawing the same page without a watermark (the floor of a page image). CPU ms per page on
// one thread; the letter (2 pages) and a 10-page flowing document. Then page images as the server
// keeps them (src/documents/images.ts): a page's first image, another viewer's (their watermark laid
// over the kept page) and a repeated one, beside the floor; and generate's latency while one viewer
// pages through a 20-page document 20 requests at a time, beside its latency on the idle server,
// with page images kept (the default) and with none kept (PAGE_IMAGE_CACHE_MB=0).
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { PDFDocument } = require('pdf-lib');
const { loadTemplate, renderTemplate } = require('../dist/src/templates');
const os = require('node:os');
const autocannon = require('autocannon');
const { viewCopy } = require('../dist/src/templates/viewcopy');
const { inProcessRenderer } = require('../dist/src/templates/pool');
const { PageImages } = require('../dist/src/documents/images');
const { inTurns, benchLetter, nextValues } = require('./render');
const { paperlink, serve, stop } = require('./processes');
const { signIn } = require('./views');

const STAMP = {
  text: 'Shared with pat.lee@example.com · 2026-11-26 14:05 UTC · 203.0.113.7',
  position: 'center',
  opacity: 0.2,
  size: null,
  rotation: null,
};

async function run(report) {
  const letter = await renderTemplate(await benchLetter(), nextValues());
  const flowing = await loadTemplate(fs.readFileSync(path.join(__dirname, 'flowing.xml'), 'utf8'));
  const paragraph = nextValues().p1;
  const ten = await renderTemplate(flowing, {
    paragraphs: JSON.stringify(Array.from({ length: 85 }, () => ({ text: paragraph }))),
  });
  const rows = [];
  for (const [label, pdf] of [
    ['letter', letter],
    ['flowing', ten],
  ]) {
    const pages = (await PDFDocument.load(pdf)).getPageCount();
    const whole = await inTurns(`${label}, whole PDF`, [
      { what: 'floor: pdf-lib reads and writes it unchanged', fn: async () => (await PDFDocument.load(pdf)).save() },
      { what: 'watermark across the middle', fn: async () => (await viewCopy(pdf, { stamp: STAMP })).bytes },
      {
        what: 'watermark tiled',
        fn: async () => (await viewCopy(pdf, { stamp: { ...STAMP, position: 'tiled' } })).bytes,
      },
    ]);
    // as the server keeps them: warmed with page 1 drawn clean, and with STAMP's image of it
    const kept = new PageImages(inProcessRenderer, async () => pdf, 64 << 20);
    await kept.image('doc', 1, STAMP);
    let viewer = 0;
    const image = await inTurns(`${label}, page image`, [
      { what: 'floor: pdf.js draws page 1 (no watermark)', fn: async () => (await viewCopy(pdf, { page: 1 })).bytes },
      {
        what: "a page's first image, watermarked (drawn, stamped, kept)",
        fn: () => new PageImages(inProcessRenderer, async () => pdf, 64 << 20).image('doc', 1, STAMP),
      },
      {
        what: "another viewer's first image of it: their watermark over the kept page",
        fn: () => kept.image('doc', 1, { ...STAMP, text: `${STAMP.text} · ${++viewer}` }),
      },
      { what: 'the same image again (kept)', fn: () => kept.image('doc', 1, STAMP) },
    ]);
    const cpuMs = (r) => r.cpuUs / 1000 / r.calls;
    for (const [runs, per] of [
      [whole, pages],
      [image, 1],
    ]) {
      const floor = cpuMs(runs[0]);
      for (const r of runs)
        rows.push([
          `${label} (${pages} p.)`,
          r.what,
          (cpuMs(r) / per).toFixed(2),
          `${(r.out.length / 1024 / per).toFixed(0)} KB`,
          r === runs[0] ? '–' : `${(cpuMs(r) / floor).toFixed(2)}×`,
        ]);
    }
  }
  report.section('What a Magic Link viewing costs (watermark, page images)');
  report.line(
    'CPU ms per page on one thread (a whole PDF: per page of it; an image: one page), each beside its floor measured in turns in the same run.',
  );
  report.table(['document', 'what', 'CPU ms / page', 'size / page', '÷ floor'], rows);
  await whileViewing(report);
}

const LONG_PARAGRAPHS = 170; // 20 pages of bench/flowing.xml
const VIEWER_CONNECTIONS = 20;
const GENERATE_SECONDS = 8;

/** Generates the letter one after another for `seconds`; resolves with each one's latency in ms. */
async function generates(url, headers, seconds) {
  const values = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'examples/letter/sample.json'), 'utf8'));
  const latencies = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const start = performance.now();
    const res = await fetch(`${url}/v1/generate`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        template_id: 'tmpl_example_letter',
        merge_parameters: values,
        destinations: { inkit_storage: { name: 'bench' } },
      }),
    });
    await res.arrayBuffer();
    if (res.status !== 201) throw new Error(`generate answered ${res.status}`);
    latencies.push(performance.now() - start);
  }
  return latencies;
}

const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

/**
 * Generate's latency on an idle server, then while one signed-in viewer of a 20-page document
 * (downloads off, a watermark) asks for its pages in order, 20 at a time, from the first ask on:
 * the first pass draws every page, later ones find them kept. Then the same with no page kept.
 */
async function whileViewing(report) {
  const rows = [];
  let pageCount = 0;
  for (const cacheMb of ['64', '0']) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-bench-sharing-'));
    const key = paperlink(['keys', 'create', '--name', 'bench'], dataDir);
    const flowing = paperlink(['templates', 'add', path.join(__dirname, 'flowing.xml')], dataDir);
    const { child, url } = await serve(dataDir, { env: { PAGE_IMAGE_CACHE_MB: cacheMb, RENDER_THREADS: '1' } });
    try {
      const headers = { 'x-service-api-token': key, 'content-type': 'application/json' };
      const paragraph = nextValues().p1;
      const made = await (
        await fetch(`${url}/v1/generate`, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            template_id: flowing,
            merge_parameters: {
              paragraphs: JSON.stringify(Array.from({ length: LONG_PARAGRAPHS }, () => ({ text: paragraph }))),
            },
            destinations: {
              inkit_storage: { name: 'long' },
              magic_link: {
                recipient_email: 'viewer@example.com',
                expire_after_n_views: 1000000,
                allow_download: false,
                watermark: { text: 'For {{email}} · {{viewed_at}}' },
              },
            },
          }),
        })
      ).json();
      const link = new URL(made.destinations.magic_link.url).pathname;
      const cookie = await signIn(url, dataDir, link);
      const opened = await fetch(`${url}${link}`, { headers: { cookie } });
      const pages = Number(/data-count="(\d+)"/.exec(await opened.text())[1]);
      pageCount = pages;
      process.stderr.write(
        `  generate, idle then while a viewer pages ${pages} pages (PAGE_IMAGE_CACHE_MB=${cacheMb})…\n`,
      );
      await generates(url, headers, 2);
      const idle = await generates(url, headers, GENERATE_SECONDS);
      let n = 0;
      const viewing = autocannon({
        url,
        connections: VIEWER_CONNECTIONS,
        duration: 600,
        requests: [
          { setupRequest: (req) => ({ ...req, path: `${link}/pages/${(n++ % pages) + 1}`, headers: { cookie } }) },
        ],
      });
      const done = new Promise((resolve) => viewing.on('done', resolve));
      const busy = await generates(url, headers, GENERATE_SECONDS);
      viewing.stop();
      const viewed = await done;
      if (viewed.non2xx || viewed.errors)
        throw new Error(`page images: ${viewed.non2xx} not 2xx, ${viewed.errors} errors`);
      const p50 = quantile(idle, 0.5);
      rows.push([
        cacheMb === '0' ? 'none kept (PAGE_IMAGE_CACHE_MB=0)' : 'kept (the default)',
        `${p50.toFixed(0)} ms`,
        `${quantile(busy, 0.5).toFixed(0)} ms`,
        `${quantile(busy, 0.95).toFixed(0)} ms`,
        `${(quantile(busy, 0.5) / p50).toFixed(2)}×`,
        `${(viewed['2xx'] / viewed.duration).toFixed(1)}`,
      ]);
    } finally {
      await stop(child);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }
  report.line('');
  report.line(
    `Generate (the example letter, one request at a time for ${GENERATE_SECONDS} s) on an idle server with one render thread, then while one signed-in viewer of a ${pageCount}-page document (downloads off, a watermark) asks for its page images in order, ${VIEWER_CONNECTIONS} at a time, from their first ask: the first pass draws each page, later passes find it kept. Target: p50 while viewing ≤ 2 × idle.`,
  );
  report.table(
    ['page images', 'generate p50 idle', 'p50 while viewing', 'p95 while viewing', 'p50 ÷ idle', 'page images / s'],
    rows,
  );
}

module.exports = { run };
