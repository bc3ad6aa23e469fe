import fs from 'node:fs';
import path from 'node:path';
import { loadTemplateFile, renderTemplate } from '../../src/templates';
import { root } from '../support/fixtures';
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
  it('business letter: letterhead on page one, running head and page numbers after', async () => {
    const { pdf, values } = await example('letter', 'letter.xml');
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
