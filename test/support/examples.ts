/**
 * What the letter and the invoice print in every format they ship in (XML, HTML, Word): the same
 * sample.json, so the same text, on every page its page size and a "Page N of M" footer.
 */
import { renderExample } from './fixtures';

type Rendered = Awaited<ReturnType<typeof renderExample>>;

function pagesAre(r: Rendered, size: [number, number]) {
  expect(r.pdf.pages.map((p) => [Math.round(p.width), Math.round(p.height)])).toEqual(r.pdf.pages.map(() => size));
  r.pdf.pages.forEach((p, i) => expect(p.text).toContain(`Page ${i + 1} of ${r.pdf.pages.length}`));
}

/** The letter of examples/<folder>: recipient, subject, body, sender, its logo, on US Letter. */
export async function expectLetter(folder: string, kind: string): Promise<Rendered> {
  const r = await renderExample(folder);
  expect(r.t.kind).toBe(kind);
  const text = r.pdf.text.replace(/\s+/g, ' ');
  pagesAre(r, [612, 792]);
  expect(r.pdf.pages[0].images).toHaveLength(1);
  expect(text).toContain(`Re: ${r.values.subject}`);
  expect(text).toContain(r.values.sender_name);
  expect(text).toContain('birds do not notice');
  return r;
}

/** The invoice of examples/<folder>: over two pages at least, every line item, the header row on each page, the total. */
export async function expectInvoice(folder: string, size: [number, number]): Promise<Rendered> {
  const r = await renderExample(folder);
  const items = JSON.parse(r.values.line_items) as { description: string }[];
  const text = r.pdf.text.replace(/\s+/g, ' ');
  expect(r.pdf.pages.length).toBeGreaterThanOrEqual(2);
  pagesAre(r, size);
  for (const page of r.pdf.pages) expect(page.text).toContain('Unit price');
  for (const item of items) expect(text).toContain(item.description);
  expect(text).toContain(r.values.total);
  return r;
}
