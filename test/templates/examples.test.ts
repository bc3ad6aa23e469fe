import fs from 'node:fs';
import path from 'node:path';
import {
  layoutTemplate,
  loadTemplateFile,
  renderTemplate,
  type RenderWarning,
  type XmlTemplate,
} from '../../src/templates';
import type { StructElem } from '../../src/templates/model';
import { root } from '../support/fixtures';
import { expectClosingWithBody, expectInvoice, expectLetter } from '../support/examples';
import { find, readPdf } from '../support/pdf';

async function example(name: string, file: string) {
  const t = await loadTemplateFile(path.join(root, 'examples', name, file));
  const values = JSON.parse(fs.readFileSync(path.join(root, 'examples', name, 'sample.json'), 'utf8')) as Record<
    string,
    string
  >;
  return { values, pdf: await readPdf(await renderTemplate(t, values)) };
}

describe('the example templates', () => {
  it('business letter and invoice: what every format of them prints (support/examples.ts)', async () => {
    expectClosingWithBody(await expectLetter('letter', 'xml'));
    await expectInvoice('invoice');
  });

  it('business letter: one page with its sample, the closing and signature on it', async () => {
    const { pdf, values } = await example('letter', 'letter.xml');
    expect(pdf.pages.length).toBe(1);
    find(pdf.pages[0], 'Kind regards');
    find(pdf.pages[0], values.sender_name);
    find(pdf.pages[0], `Enclosure: ${values.enclosure}`);
    find(pdf.pages[0], 'Page 1 of 1');
  });

  it('business letter, long: letterhead on page one, running head and page numbers after', async () => {
    const { values: sample } = await example('letter', 'letter.xml');
    const values: Record<string, string> = { ...sample, body: Array(3).fill(sample.body).join('\n\n') };
    const t = await loadTemplateFile(path.join(root, 'examples', 'letter', 'letter.xml'));
    const pdf = await readPdf(await renderTemplate(t, values));
    expect(pdf.pages.length).toBe(2);
    expect(pdf.pages[0].images).toHaveLength(1);
    expect(pdf.pages[1].images).toHaveLength(0);
    expect(pdf.pages[1].text).toContain(`Letter to ${values.recipient_name}`);
    pdf.pages.forEach((p, i) => find(p, `Page ${i + 1} of 2`));
    expect(pdf.text).toContain(`Re: ${values.subject}`);
    expect(pdf.text).toContain(values.sender_name);
    expect(pdf.info.Title).toBe(`Letter to ${values.recipient_name}`);
  });

  it('invoice: line items run over two pages with the header row on each, totals after the last item', async () => {
    const { pdf, values } = await example('invoice', 'invoice.xml');
    const items = JSON.parse(values.line_items) as { description: string; amount: string }[];
    expect(pdf.pages.length).toBe(2);
    for (const page of pdf.pages) find(page, 'Unit price');
    const descriptions = pdf.pages.flatMap((p) =>
      p.items.filter((i) => items.some((it) => it.description === i.str)).map((i) => i.str),
    );
    expect(descriptions).toEqual(items.map((i) => i.description));
    const last = pdf.pages[1];
    const total = find(last, values.total);
    const lastItem = find(last, items[items.length - 1].description);
    expect(total.y).toBeGreaterThan(lastItem.y);
    expect(pdf.text).toContain('INVOICE');
  });

  it('postcard: a 6x4 in front with a full-bleed picture, a back with the address on the right half', async () => {
    const { pdf, values } = await example('postcard', 'postcard.xml');
    expect(pdf.pages).toHaveLength(2);
    for (const p of pdf.pages) expect([p.width, p.height]).toEqual([432, 288]);
    expect(pdf.pages[0].images).toEqual([{ x: 0, y: 0, width: 432, height: 288 }]);
    expect(pdf.pages[0].text).toContain(`Greetings from ${values.city}`);
    const back = pdf.pages[1];
    const street = find(back, values.address_line_1);
    expect(street.x).toBeGreaterThan(432 / 2);
    find(back, `${values.address_city}, ${values.address_state} ${values.address_zip}`);
    expect(find(back, `Hi ${values.first_name}`).x).toBeLessThan(432 / 2);
  });
});

describe('the example templates with their samples and with every value twice as long', () => {
  /** A value twice as long: text doubled, amounts and other figures kept; in a list, each item's text. */
  const doubled = (v: string): string => {
    if (v.startsWith('[')) {
      const items = JSON.parse(v) as Record<string, string>[];
      return JSON.stringify(items.map((it) => Object.fromEntries(Object.entries(it).map(([k, x]) => [k, doubled(x)]))));
    }
    return /^[\d$.,%−-]*$/.test(v) ? v : `${v} ${v}`;
  };

  it.each(
    ['letter', 'invoice', 'postcard'].flatMap((name) => [
      [name, 'sample'],
      [name, 'doubled'],
    ]),
  )('%s with %s values: no overflow, no widow or orphan line, no row or closing split', async (name, kind) => {
    const dir = path.join(root, 'examples', name);
    const t = await loadTemplateFile(path.join(dir, `${name}.xml`));
    const sample = JSON.parse(fs.readFileSync(path.join(dir, 'sample.json'), 'utf8')) as Record<string, string>;
    const values =
      kind === 'sample' ? sample : Object.fromEntries(Object.entries(sample).map(([k, v]) => [k, doubled(v)]));
    const warnings: RenderWarning[] = [];
    const pages = layoutTemplate(t as XmlTemplate, values, warnings);
    expect(warnings).toEqual([]);
    // each paragraph's lines (distinct baselines) and each table row, by page, from the tags of what was drawn
    const lines = new Map<StructElem, Map<number, Set<number>>>();
    const rows = new Map<StructElem, Set<number>>();
    pages.forEach((page, i) =>
      page.ops.forEach((op) => {
        if (op.kind !== 'text' || !op.tag || op.tag === 'artifact') return;
        const byPage = lines.get(op.tag) ?? new Map<number, Set<number>>();
        lines.set(op.tag, byPage.set(i, (byPage.get(i) ?? new Set()).add(Math.round(op.y * 10))));
        if (op.tag.parent?.role === 'TR') rows.set(op.tag.parent, (rows.get(op.tag.parent) ?? new Set()).add(i));
      }),
    );
    for (const [elem, byPage] of lines) {
      if (elem.role === 'TD' || elem.role === 'TH' || byPage.size < 2) continue;
      const counts = [...byPage.values()].map((s) => s.size);
      expect(counts[0]).toBeGreaterThanOrEqual(2); // no orphan
      expect(counts[counts.length - 1]).toBeGreaterThanOrEqual(2); // no widow
    }
    for (const onPages of rows.values()) expect(onPages.size).toBe(1);
    if (name === 'letter') {
      const pageOf = (needle: string) =>
        pages.findIndex((p) => p.ops.some((op) => op.kind === 'text' && op.text.includes(needle)));
      expect(pageOf('Kind regards')).toBe(pageOf(values.sender_name.split(' ')[0]));
    }
  });
});
