/**
 * What the letter and the invoice print in every format they ship in (XML, HTML, Word): the same
 * sample.json, so the same text, on every page its page size and a "Page N of M" footer; a tagged
 * PDF (its structure for screen readers); the letter's closing and signature on one page; the
 * invoice on A4 in every format.
 */
import { renderExample } from './fixtures';
import { readStructure } from './pdf';

type Rendered = Awaited<ReturnType<typeof renderExample>>;

function pagesAre(r: Rendered, size: [number, number]) {
  expect(r.pdf.pages.map((p) => [Math.round(p.width), Math.round(p.height)])).toEqual(r.pdf.pages.map(() => size));
  r.pdf.pages.forEach((p, i) => expect(p.text).toContain(`Page ${i + 1} of ${r.pdf.pages.length}`));
}

/** Tagged: the catalog says so, and each page has a structure tree a screen reader reads. */
async function isTagged(r: Rendered) {
  const structure = await readStructure(r.bytes);
  expect(structure.marked).toBe(true);
  for (const page of structure.pages) expect(page.tree.length).toBeGreaterThan(0);
}

/** The page each text is on (the first that has it), the text with its spaces as one. */
const pageOf = (r: Rendered, text: string) =>
  r.pdf.pages.findIndex((p) => p.text.replace(/\s+/g, ' ').includes(text.replace(/\s+/g, ' ')));

/**
 * The letter of examples/<folder>: recipient, subject, body, sender, its logo, on US Letter,
 * tagged; the closing and the whole signature on one page.
 */
export async function expectLetter(folder: string, kind: string): Promise<Rendered> {
  const r = await renderExample(folder);
  expect(r.t.kind).toBe(kind);
  const text = r.pdf.text.replace(/\s+/g, ' ');
  pagesAre(r, [612, 792]);
  expect(r.pdf.pages[0].images).toHaveLength(1);
  expect(text).toContain(`Re: ${r.values.subject}`);
  expect(text).toContain(r.values.sender_name);
  expect(text).toContain('birds do not notice');
  await isTagged(r);
  const closing = pageOf(r, 'Kind regards');
  expect(closing).toBeGreaterThanOrEqual(0);
  expect([pageOf(r, r.values.sender_name), pageOf(r, r.values.sender_title)]).toEqual([closing, closing]);
  return r;
}

/**
 * A letter whose closing never stands alone: the page that holds it holds the end of the body too
 * (what the sample does when it runs onto a second page).
 */
export function expectClosingWithBody(r: Rendered) {
  const closing = pageOf(r, 'Kind regards');
  const lastWords = r.values.body.trim().split(/\s+/).slice(-6).join(' ');
  expect(pageOf(r, lastWords)).toBe(closing);
  const page = r.pdf.pages[closing].text.replace(/\s+/g, ' ');
  // body text above the closing on its page, not only the closing and the signature
  expect(page.indexOf(lastWords)).toBeLessThan(page.indexOf('Kind regards'));
}

/** The invoice of examples/<folder>: over two pages at least, every line item, the header row on each page, the total, on A4, tagged. */
export async function expectInvoice(folder: string): Promise<Rendered> {
  const r = await renderExample(folder);
  const items = JSON.parse(r.values.line_items) as { description: string }[];
  const text = r.pdf.text.replace(/\s+/g, ' ');
  expect(r.pdf.pages.length).toBeGreaterThanOrEqual(2);
  pagesAre(r, [595, 842]);
  for (const page of r.pdf.pages) expect(page.text).toContain('Unit price');
  for (const item of items) expect(text).toContain(item.description);
  expect(text).toContain(r.values.total);
  // one family throughout (the Word invoice's bill-to block and footer were serif): bold or not
  const families = r.pdf.pages.flatMap((p) => p.runs.filter((x) => !x.invisible && x.text.trim()).map((x) => x.font));
  expect(new Set(families.map((f) => f.split('-')[0])).size).toBe(1);
  await isTagged(r);
  return r;
}
