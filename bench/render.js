// Template engine vs. raw pdf-lib: the same one-page letter, drawn by hand with pdf-lib calls
// and rendered by Paperlink from letter.xml, in the same process, one after the other.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { PDFDocument, rgb } = require('pdf-lib');
const fontkit = require('@pdf-lib/fontkit');
const { loadTemplate, renderTemplate, folderAssets } = require('../dist/src/templates');
const { measure: timeIt } = require('./measure');

const root = path.resolve(__dirname, '..');
const dejavu = (f) => fs.readFileSync(path.join(path.dirname(require.resolve('dejavu-fonts-ttf/package.json')), 'ttf', f));
const regular = dejavu('DejaVuSans.ttf');
const bold = dejavu('DejaVuSans-Bold.ttf');
const logo = fs.readFileSync(path.join(root, 'examples/letter/logo.png'));

const values = {
  date: 'November 22, 2026',
  name: 'Dr. Eleanor Vance',
  address: '1200 Riverside Drive, Suite 300\nPortland, OR 97201',
  subject: 'Design proposal for the new visitor centre',
  p1: 'Thank you for meeting with us last Thursday to talk about the new visitor centre. We enjoyed walking the site with your team and came away with a clear picture of what the building has to do: welcome twelve thousand visitors a month, tell the story of the river, and stay quiet enough that the birds do not notice.',
  p2: 'We would begin with a four-week discovery phase in which we interview your staff and volunteers, study the visitor numbers from the last three seasons, and map how people move through the existing hall. From that work we will propose two design directions, each with sketches, a rough budget and a schedule.',
  p3: 'Once you have chosen a direction, we would develop it into a full design over eight weeks, with a review every fortnight. Our fee for discovery and design is fixed, and we invoice it in three parts so that you never pay for work you have not yet seen.',
  sender: 'Marta Kowalczyk',
};

/** The letter as a developer would draw it with pdf-lib alone: embedded fonts, wrapped text, an image, a rule. */
async function rawLetter() {
  const doc = await PDFDocument.create();
  doc.registerFontkit(fontkit);
  const font = await doc.embedFont(regular, { subset: true });
  const fontBold = await doc.embedFont(bold, { subset: true });
  const image = await doc.embedPng(logo);
  const page = doc.addPage([612, 792]);
  const size = 11;
  const lh = size * 1.4;
  const width = 468;
  let y = 792 - 72;
  page.drawImage(image, { x: 72, y: y - 40, width: 160, height: 40 });
  y -= 40 + 24;
  const text = (t, f = font, opts = {}) => {
    page.drawText(t, { x: 72, y: y - size, size, font: f, maxWidth: width, lineHeight: lh, color: rgb(0.1, 0.1, 0.1), ...opts });
    const lines = t.split('\n').reduce((n, l) => n + Math.max(1, Math.ceil(f.widthOfTextAtSize(l, size) / width)), 0);
    y -= lines * lh;
  };
  const dateWidth = font.widthOfTextAtSize(values.date, size);
  page.drawText(values.date, { x: 540 - dateWidth, y: y - size, size, font });
  y -= lh + 6;
  text(values.name, fontBold);
  text(values.address);
  y -= 18;
  text(`Re: ${values.subject}`, fontBold);
  y -= 10;
  text(`Dear ${values.name},`);
  y -= 6;
  for (const p of [values.p1, values.p2, values.p3]) {
    text(p);
    y -= 6;
  }
  page.drawLine({ start: { x: 72, y: y - 4 }, end: { x: 540, y: y - 4 }, thickness: 0.75, color: rgb(0.6, 0.6, 0.6) });
  y -= 16;
  text('Kind regards,');
  y -= 6;
  text(values.sender, fontBold);
  return doc.save();
}

async function run(report) {
  const assets = folderAssets(path.join(root, 'examples/letter'));
  const letter = await loadTemplate(fs.readFileSync(path.join(__dirname, 'letter.xml'), 'utf8'), { assets });
  const flowing = await loadTemplate(fs.readFileSync(path.join(__dirname, 'flowing.xml'), 'utf8'));
  const paragraph = (n) => JSON.stringify(Array.from({ length: n }, () => ({ text: values.p1 + ' ' + values.p2 })));
  const pagesOf = async (n) => (await PDFDocument.load(await renderTemplate(flowing, { paragraphs: paragraph(n) }))).getPageCount();
  // find paragraph counts that make exactly 1 and 10 pages
  let one = 1;
  while ((await pagesOf(one + 1)) === 1) one++;
  let ten = one * 10;
  while ((await pagesOf(ten)) > 10) ten--;
  while ((await pagesOf(ten + 1)) === 10) ten++;

  const raw = await timeIt('raw pdf-lib, one-page letter', rawLetter);
  const ours = await timeIt('Paperlink template, one-page letter', () => renderTemplate(letter, values));
  const onePage = await timeIt('Paperlink, 1-page flowing text', () => renderTemplate(flowing, { paragraphs: paragraph(one) }));
  const tenPages = await timeIt('Paperlink, 10-page flowing text', () => renderTemplate(flowing, { paragraphs: paragraph(ten) }));

  report.section('Template engine vs. raw pdf-lib (one-page letter)');
  report.table(
    ['what', 'documents/s', 'ms/document', 'output size'],
    [
      ['(a) raw pdf-lib calls', raw.rate.toFixed(1), raw.ms.toFixed(2), `${(raw.size / 1024).toFixed(1)} KB`],
      ['(b) Paperlink from XML', ours.rate.toFixed(1), ours.ms.toFixed(2), `${(ours.size / 1024).toFixed(1)} KB`],
    ],
  );
  report.line(`ratio (b)/(a): ${(ours.rate / raw.rate).toFixed(2)} (target >= 0.9)`);
  report.section('Cost per page of a flowing document');
  report.table(
    ['document', 'ms/document', 'ms/page', 'output size'],
    [
      ['1 page', onePage.ms.toFixed(2), onePage.ms.toFixed(2), `${(onePage.size / 1024).toFixed(1)} KB`],
      ['10 pages', tenPages.ms.toFixed(2), (tenPages.ms / 10).toFixed(2), `${(tenPages.size / 1024).toFixed(1)} KB`],
    ],
  );
  report.line(`per-page cost, 10 pages relative to 1: ${(tenPages.ms / 10 / onePage.ms).toFixed(2)} (linear = 1.0 or less)`);
  return { ratio: ours.rate / raw.rate, perPage: tenPages.ms / 10 / onePage.ms };
}

module.exports = { run, rawLetter, values };
