// What a Magic Link viewing costs the server (docs/magic-links.md, "Watermarks and downloads"): the
// PDF with a watermark drawn for the viewing session, and one page drawn as an image when downloads
// are off. Beside their floors in the same run, measured in turns: pdf-lib reading and writing the
// same PDF unchanged (the floor of any change to a PDF; serving it as stored costs nothing), and
// pdf.js drawing the same page without a watermark (the floor of a page image). CPU ms per page on
// one thread; the letter (2 pages) and a 10-page flowing document.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { PDFDocument } = require('pdf-lib');
const { loadTemplate, renderTemplate } = require('../dist/src/templates');
const { viewCopy } = require('../dist/src/templates/viewcopy');
const { inTurns, benchLetter, nextValues } = require('./render');

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
    const image = await inTurns(`${label}, page image`, [
      { what: 'floor: pdf.js draws page 1 (no watermark)', fn: async () => (await viewCopy(pdf, { page: 1 })).bytes },
      { what: 'page 1 with the watermark', fn: async () => (await viewCopy(pdf, { page: 1, stamp: STAMP })).bytes },
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
}

module.exports = { run };
