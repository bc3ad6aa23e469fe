#!/usr/bin/env node
/*
 * Writes the Word examples (examples/letter-docx/letter.docx, examples/invoice-docx/invoice.docx):
 * the letter and the invoice of examples/letter and examples/invoice, with docxtemplater merge
 * fields, filled by the same sample.json. The .docx files are committed; run this after changing
 * it (`node scripts/make-docx-examples.js`), then open the files in Word or LibreOffice to look.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const PizZip = require('pizzip');

const root = path.join(__dirname, '..', 'examples');
const BLUE = '1F4E79';
const GREY = '5B7A99';
const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A run of text; `o` sets bold, size (points), colour, font. */
function run(text, o = {}) {
  const props = [
    o.font && `<w:rFonts w:ascii="${o.font}" w:hAnsi="${o.font}" w:cs="${o.font}"/>`,
    o.bold && '<w:b/>',
    o.color && `<w:color w:val="${o.color}"/>`,
    o.size && `<w:sz w:val="${o.size * 2}"/><w:szCs w:val="${o.size * 2}"/>`,
  ].filter(Boolean);
  return `<w:r>${props.length ? `<w:rPr>${props.join('')}</w:rPr>` : ''}<w:t xml:space="preserve">${esc(text)}</w:t></w:r>`;
}

/** A paragraph of runs (strings are plain runs); `o` sets alignment and space after (points). */
function para(runs, o = {}) {
  const props = [
    o.keepNext && '<w:keepNext/>',
    `<w:spacing w:before="${(o.before ?? 0) * 20}" w:after="${(o.after ?? 0) * 20}"/>`,
    o.align && `<w:jc w:val="${o.align}"/>`,
  ].filter(Boolean);
  const body = (Array.isArray(runs) ? runs : [runs]).map((r) => (typeof r === 'string' ? run(r) : r.xml)).join('');
  return `<w:p><w:pPr>${props.join('')}</w:pPr>${body}</w:p>`;
}
const r = (text, o) => ({ xml: run(text, o) });
/** Paragraphs printed only when `name` is not empty (or "false", "0", "no"). */
const when = (name, ...paragraphs) => [para(`{#${name}}`), ...paragraphs, para(`{/${name}}`)];

/** A table cell: width in twentieths of a point, shading, right alignment. */
function cell(content, o = {}) {
  const props = [
    `<w:tcW w:w="${o.width}" w:type="dxa"/>`,
    o.fill && `<w:shd w:val="clear" w:color="auto" w:fill="${o.fill}"/>`,
    o.rule && `<w:tcBorders><w:bottom w:val="single" w:sz="4" w:color="C9D4DF"/></w:tcBorders>`,
  ].filter(Boolean);
  return `<w:tc><w:tcPr>${props.join('')}</w:tcPr>${content}</w:tc>`;
}
const row = (cells, o = {}) =>
  `<w:tr>${o.header ? '<w:trPr><w:tblHeader/><w:cantSplit/></w:trPr>' : '<w:trPr><w:cantSplit/></w:trPr>'}${cells.join('')}</w:tr>`;
function table(widths, rows, o = {}) {
  const grid = widths.map((w) => `<w:gridCol w:w="${w}"/>`).join('');
  return `<w:tbl><w:tblPr><w:tblW w:w="${widths.reduce((a, b) => a + b)}" w:type="dxa"/>${o.right ? '<w:jc w:val="right"/>' : ''}<w:tblLayout w:type="fixed"/><w:tblCellMar><w:top w:w="50" w:type="dxa"/><w:left w:w="100" w:type="dxa"/><w:bottom w:w="50" w:type="dxa"/><w:right w:w="100" w:type="dxa"/></w:tblCellMar></w:tblPr><w:tblGrid>${grid}</w:tblGrid>${rows.join('')}</w:tbl>`;
}

/** The logo, inline, 2.1 inches wide (720 × 180 pixels). */
function logo() {
  const cx = Math.round(2.1 * 914400);
  const cy = Math.round(cx / 4);
  return `<w:r><w:drawing><wp:inline distT="0" distB="0" distL="0" distR="0"><wp:extent cx="${cx}" cy="${cy}"/><wp:docPr id="1" name="Logo" descr="Northwind Studio"/><a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:nvPicPr><pic:cNvPr id="1" name="logo.png"/><pic:cNvPicPr/></pic:nvPicPr><pic:blipFill><a:blip r:embed="rIdLogo"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="${cx}" cy="${cy}"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></pic:spPr></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r>`;
}

/** "Left text … Page N of M" in the footer of every page. */
function footer(text) {
  const field = (code) =>
    `<w:r><w:rPr><w:color w:val="${GREY}"/><w:sz w:val="16"/></w:rPr><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:rPr><w:color w:val="${GREY}"/><w:sz w:val="16"/></w:rPr><w:instrText xml:space="preserve"> ${code} </w:instrText></w:r><w:r><w:rPr><w:color w:val="${GREY}"/><w:sz w:val="16"/></w:rPr><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:rPr><w:color w:val="${GREY}"/><w:sz w:val="16"/></w:rPr><w:t>1</w:t></w:r><w:r><w:rPr><w:color w:val="${GREY}"/><w:sz w:val="16"/></w:rPr><w:fldChar w:fldCharType="end"/></w:r>`;
  const small = { color: GREY, size: 8 };
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:ftr xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:p><w:pPr><w:pBdr><w:top w:val="single" w:sz="4" w:space="4" w:color="C9D4DF"/></w:pBdr><w:tabs><w:tab w:val="right" w:pos="9360"/></w:tabs></w:pPr>${run(text, small)}<w:r><w:tab/></w:r>${run('Page ', small)}${field('PAGE')}${run(' of ', small)}${field('NUMPAGES')}</w:p></w:ftr>`;
}

/** US Letter for the letters (their sender is in Portland, OR); A4, as the XML and HTML invoices, for the invoice. */
const LETTER = { width: 12240, height: 15840, side: 1440 };
const A4 = { width: 11906, height: 16838, side: 1273 }; // the same 9360 twips of text width as Letter

function documentXml(body, withFooter, page) {
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"><w:body>${body}<w:sectPr>${withFooter ? '<w:footerReference w:type="default" r:id="rIdFooter"/>' : ''}<w:pgSz w:w="${page.width}" w:h="${page.height}"/><w:pgMar w:top="1296" w:right="${page.side}" w:bottom="1296" w:left="${page.side}" w:header="720" w:footer="576" w:gutter="0"/></w:sectPr></w:body></w:document>`;
}

const STYLES = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:docDefaults><w:rPrDefault><w:rPr><w:rFonts w:ascii="DejaVu Serif" w:hAnsi="DejaVu Serif" w:cs="DejaVu Serif"/><w:color w:val="222222"/><w:sz w:val="22"/><w:szCs w:val="22"/><w:lang w:val="en-US"/></w:rPr></w:rPrDefault><w:pPrDefault><w:pPr><w:spacing w:after="0" w:line="288" w:lineRule="auto"/></w:pPr></w:pPrDefault></w:docDefaults><w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style></w:styles>`;

function write(file, title, body, footerText, page = LETTER) {
  const zip = new PizZip();
  zip.file(
    '[Content_Types].xml',
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Default Extension="png" ContentType="image/png"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/><Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/><Override PartName="/word/footer1.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.footer+xml"/><Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/></Types>`,
  );
  zip.file(
    '_rels/.rels',
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/></Relationships>`,
  );
  zip.file(
    'docProps/core.xml',
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>${esc(title)}</dc:title><dc:creator>Paperlink examples</dc:creator></cp:coreProperties>`,
  );
  zip.file(
    'word/_rels/document.xml.rels',
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rIdStyles" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/><Relationship Id="rIdFooter" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/footer" Target="footer1.xml"/><Relationship Id="rIdLogo" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/logo.png"/></Relationships>`,
  );
  zip.file('word/styles.xml', STYLES);
  if (!footerText) {
    // no footer: neither its part nor a relationship to it
    const drop = (name, pattern) => zip.file(name, zip.file(name).asText().replace(pattern, ''));
    drop('[Content_Types].xml', /<Override PartName="\/word\/footer1.xml"[^>]*\/>/);
    drop('word/_rels/document.xml.rels', /<Relationship Id="rIdFooter"[^>]*\/>/);
  }
  if (footerText) zip.file('word/footer1.xml', footer(footerText));
  zip.file('word/media/logo.png', fs.readFileSync(path.join(root, 'letter', 'logo.png')));
  zip.file('word/document.xml', documentXml(body, Boolean(footerText), page));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // a fixed date inside the archive, so that running this again without changes changes nothing
  const bytes = zip.generate({ type: 'nodebuffer', compression: 'DEFLATE', date: new Date('2026-11-25T00:00:00Z') });
  fs.writeFileSync(file, bytes);
  console.log(`wrote ${path.relative(process.cwd(), file)} (${bytes.length} bytes)`);
}

function copySample(from, to) {
  fs.copyFileSync(path.join(root, from, 'sample.json'), path.join(root, to, 'sample.json'));
}

// The letter: conditions ({#…}…{/…}) leave out the lines a recipient does not have.
const sans = { font: 'DejaVu Sans' };
write(
  path.join(root, 'letter-docx', 'letter.docx'),
  'Business letter (Word)',
  [
    para({ xml: logo() }, { after: 24 }),
    para('{date}', { align: 'right', after: 18 }),
    para(r('{recipient_name}', { bold: true })),
    // a paragraph holding only {#name} or {/name} is removed with the tag: no blank line is left
    ...when('recipient_title', para('{recipient_title}')),
    ...when('recipient_company', para('{recipient_company}')),
    para('{recipient_address}', { after: 20 }),
    para(r('Re: {subject}', { ...sans, bold: true, color: BLUE, size: 11.5 }), { after: 12 }),
    para('Dear {salutation},', { after: 10 }),
    // not kept with the closing: LibreOffice would move the whole body (one paragraph) to the next page
    para('{body}', { after: 10 }),
    para('Kind regards,', { before: 8, after: 36, keepNext: true }),
    para(r('{sender_name}', { bold: true }), { keepNext: true }),
    para(r('{sender_title}, Northwind Studio', { color: '555555' })),
    ...when('enclosure', para(r('Enclosure: {enclosure}', { ...sans, size: 9, color: '555555' }), { before: 18 })),
  ].join(''),
  'Northwind Studio · 410 Harbor Street, Portland, OR 97209 · hello@northwind.example',
);
copySample('letter-html', 'letter-docx');

// The invoice: the row holding {#line_items} … {/line_items} is repeated once per line item.
const W = [500, 4560, 900, 1700, 1700];
const head = (t, right) =>
  cell(para(r(t, { ...sans, bold: true, color: 'FFFFFF', size: 9 }), { align: right ? 'right' : undefined }), {
    width: 0,
    fill: BLUE,
  });
const small = { ...sans, size: 9 };
write(
  path.join(root, 'invoice-docx', 'invoice.docx'),
  'Invoice (Word)',
  [
    table(
      [5360, 4000],
      [
        row([
          cell(
            para({ xml: logo() }) +
              para(
                r('410 Harbor Street, Portland, OR 97209 · hello@northwind.example', {
                  ...small,
                  color: GREY,
                  size: 8,
                }),
              ),
            { width: 5360 },
          ),
          cell(
            para(r('INVOICE', { ...sans, bold: true, color: BLUE, size: 22 }), { align: 'right' }) +
              para(r('No. {invoice_number}', { ...sans, color: GREY }), { align: 'right' }),
            { width: 4000 },
          ),
        ]),
      ],
    ),
    para('', { after: 12 }),
    table(
      [5360, 1800, 2200],
      [
        row([
          cell(para(r('BILL TO', { ...small, color: GREY })), { width: 5360 }),
          cell(para(r('ISSUED', { ...small, color: GREY })), { width: 1800 }),
          cell(para('{issue_date}'), { width: 2200 }),
        ]),
        row([
          cell(para(r('{client_name}', { bold: true })), { width: 5360 }),
          cell(para(r('DUE', { ...small, color: GREY })), { width: 1800 }),
          cell(para(r('{due_date}', { bold: true })), { width: 2200 }),
        ]),
        row([
          cell(para('{client_address}'), { width: 5360 }),
          cell(para(r('REFERENCE', { ...small, color: GREY })), { width: 1800 }),
          cell(para('{reference}'), { width: 2200 }),
        ]),
      ],
    ),
    para('', { after: 12 }),
    table(W, [
      row(
        [head('#'), head('Description'), head('Qty', true), head('Unit price', true), head('Amount', true)].map(
          (c, i) => c.replace('w:w="0"', `w:w="${W[i]}"`),
        ),
        { header: true },
      ),
      row([
        cell(para(r('{#line_items}{number}', { ...small, color: GREY })), { width: W[0], rule: true }),
        cell(
          para(r('{description}', small)) +
            when('detail', para(r('{detail}', { ...small, color: GREY, size: 8 }))).join(''),
          { width: W[1], rule: true },
        ),
        cell(para(r('{quantity}', small), { align: 'right' }), { width: W[2], rule: true }),
        cell(para(r('{unit_price}', small), { align: 'right' }), { width: W[3], rule: true }),
        cell(para(r('{amount}{/line_items}', small), { align: 'right' }), { width: W[4], rule: true }),
      ]),
    ]),
    para('', { after: 6 }),
    table(
      [2400, 1700],
      [
        row([
          cell(para(r('Subtotal', { ...sans, color: GREY }), { align: 'right' }), { width: 2400 }),
          cell(para(r('{subtotal}', sans), { align: 'right' }), { width: 1700 }),
        ]),
        row([
          cell(para(r('{#discount}Discount{/discount}', { ...sans, color: GREY }), { align: 'right' }), {
            width: 2400,
          }),
          cell(para(r('{#discount}−{discount}{/discount}', sans), { align: 'right' }), { width: 1700 }),
        ]),
        row([
          cell(para(r('Tax ({tax_rate})', { ...sans, color: GREY }), { align: 'right' }), { width: 2400 }),
          cell(para(r('{tax}', sans), { align: 'right' }), { width: 1700 }),
        ]),
        row([
          cell(para(r('Total due', { ...sans, bold: true, color: 'FFFFFF' }), { align: 'right' }), {
            width: 2400,
            fill: BLUE,
          }),
          cell(para(r('{total}', { ...sans, bold: true, color: 'FFFFFF' }), { align: 'right' }), {
            width: 1700,
            fill: BLUE,
          }),
        ]),
      ],
      { right: true },
    ),
    ...when(
      'notes',
      para(r('Notes', { ...sans, bold: true, color: BLUE, size: 10 }), { before: 16, after: 4, keepNext: true }) +
        para(r('{notes}', small)),
    ),
    para(
      r('Please pay within 30 days by bank transfer, quoting the invoice number. Thank you for your business.', {
        ...small,
        color: GREY,
        size: 8.5,
      }),
      { before: 10 },
    ),
  ].join(''),
  'Payable to Northwind Studio LLC · IBAN US00 NWND 0000 4242 1234 · billing@northwind.example',
  A4,
);
copySample('invoice-html', 'invoice-docx');

// The bench's letter (bench/letter.xml, bench/letter.html and its Typst twin): the same text, fonts and logo.
write(
  path.join(root, '..', 'bench', 'letter.docx'),
  'Letter',
  [
    para({ xml: logo() }, { after: 12 }),
    para('{date}', { align: 'right', after: 10 }),
    para(r('{name}', { ...sans, bold: true })),
    para(r('{address}', sans), { after: 10 }),
    para(r('Re: {subject}', { ...sans, bold: true }), { after: 10 }),
    para(r('Dear {name},', sans), { after: 10 }),
    para(r('{p1}', sans), { after: 10 }),
    para(r('{p2}', sans), { after: 10 }),
    para(r('{p3}', sans), { after: 10 }),
    para(r('Kind regards,', sans), { after: 10 }),
    para(r('{sender}', { ...sans, bold: true })),
  ].join(''),
);
