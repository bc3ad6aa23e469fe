/**
 * Tagged PDF: what a screen reader gets from a rendered document. Read back with pdf.js's own
 * structure tree (what Firefox's accessibility layer exposes), joined to the text drawn in each
 * element's marked content.
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadTemplate, loadTemplateFile, renderTemplate } from '../../src/templates';
import { root, png } from '../support/fixtures';
import { readStructure, type StructNode } from '../support/pdf';

const NOW = { now: new Date('2026-11-22T10:00:00Z') };
const assets = async (p: string) => (p === 'logo.png' ? new Uint8Array(png) : undefined);

async function structure(xml: string, values: Record<string, string> = {}) {
  return readStructure(await renderTemplate(await loadTemplate(xml, { assets }), values, NOW));
}

/** An example rendered with its sample values, `change`d (a longer letter). */
async function example(name: string, change: (values: Record<string, string>) => Record<string, string> = (v) => v) {
  const dir = path.join(root, 'examples', name);
  const xml = fs.readdirSync(dir).find((f) => f.endsWith('.xml'))!;
  const values = JSON.parse(fs.readFileSync(path.join(dir, 'sample.json'), 'utf8')) as Record<string, string>;
  return readStructure(await renderTemplate(await loadTemplateFile(path.join(dir, xml)), change(values), NOW));
}

/**
 * Role and text (a figure's: its alt text) of every element, depth first: the order a screen reader
 * reads them in. pdf.js lists a page's elements with all their descendants, so a table's elements
 * that stand on other pages are there too, with no text of this page.
 */
function reading(nodes: StructNode[]): string[] {
  return nodes.flatMap((n) => {
    const text = n.role === 'Figure' ? n.alt : n.text;
    return [`${n.role}${text ? ` ${text}` : ''}`, ...reading(n.children)];
  });
}

describe('tagged PDF', () => {
  it('tags headings, paragraphs, a figure with its alt text and a table with header cells, in the order written', async () => {
    const s = await structure(
      `<document lang="de-CH" title="Angebot">
        <header><p>Northwind Studio</p></header>
        <footer><p>Page {{page}} of {{pages}}</p></footer>
        <body>
          <h1>Angebot für {{name}}</h1>
          <p>Erster Absatz.</p>
          <image src="logo.png" width="1in" alt="Logo von {{name}}"/>
          <h2>Positionen</h2>
          <table><col width="*"/><col width="*"/><thead><tr><th>Was</th><th>Preis</th></tr></thead><tr><td>Entwurf</td><td>100</td></tr></table>
          <line/>
          <p>Letzter Absatz.</p>
        </body>
      </document>`,
      { name: 'Vance' },
    );
    expect(s.marked).toBe(true);
    expect(s.lang).toBe('de-CH');
    expect(reading(s.pages[0].tree)).toEqual([
      'H1 Angebot für Vance',
      'P Erster Absatz.',
      'Figure Logo von Vance',
      'H2 Positionen',
      'Table',
      'TR',
      'TH Was',
      'TH Preis',
      'TR',
      'TD Entwurf',
      'TD 100',
      'P Letzter Absatz.',
    ]);
    expect(s.pages[0].tree[2].alt).toBe('Logo von Vance');
    // page furniture is there to see, not in the reading order
    expect(s.pages[0].artifacts.join(' ')).toBe('Northwind Studio Page 1 of 1');
  });

  it('reads a paragraph that runs onto the next page as one element, and a repeated table header once', async () => {
    const rows = Array.from({ length: 60 }, (_, i) => `<tr><td>row ${i}</td><td>${i}</td></tr>`).join('');
    const long = Array.from({ length: 40 }, (_, i) => `sentence ${i} of the long paragraph.`).join(' ');
    const s = await structure(
      `<document size="a5"><body>
        <table><col width="*"/><col width="*"/><thead><tr><th>Item</th><th>N</th></tr></thead>${rows}</table>
        <p>${long}</p>
      </body></document>`,
    );
    expect(s.pages.length).toBeGreaterThan(2);
    const all = s.pages.flatMap((p) => reading(p.tree));
    // every row once, in order, and the header's cells only where they first stand
    expect(all.filter((r) => r.startsWith('TH '))).toEqual(['TH Item', 'TH N']);
    expect(all.filter((r) => r.startsWith('TD row')).map((r) => r.slice(3))).toEqual(
      Array.from({ length: 60 }, (_, i) => `row ${i}`),
    );
    expect(s.pages.slice(1).some((p) => p.artifacts.join(' ').includes('Item N'))).toBe(true);
    // the paragraph's parts on each page are one element with the whole text
    const paragraphs = s.pages.flatMap((p) => p.tree.filter((n) => n.role === 'P'));
    const split = paragraphs.map((n) => n.text);
    expect(split.join(' ')).toBe(long);
  });

  it('tags the letter as the issue asks: letterhead logo, heading and paragraphs in reading order; running heads and footers are artifacts', async () => {
    // a body three times the sample's: the letter runs onto a second page, with its running head
    const s = await example('letter', (v) => ({ ...v, body: [v.body, v.body, v.body].join('\n\n') }));
    expect(s.pages).toHaveLength(2);
    expect(s.marked).toBe(true);
    expect(s.lang).toBe('en');
    const read = s.pages.flatMap((p) => reading(p.tree));
    // the first page's letterhead is read once, first; the logo by its alt text
    expect(read.slice(0, 3)).toEqual(['Figure Northwind Studio', 'P November 22, 2026', 'P Dr. Eleanor Vance']);
    const at = (line: string) => read.indexOf(line);
    expect(at('H1 Re: Design proposal for the new visitor centre')).toBeGreaterThan(at('P Director'));
    expect(at('P Dear Dr. Vance,')).toBeGreaterThan(at('H1 Re: Design proposal for the new visitor centre'));
    expect(at('P Kind regards,')).toBeGreaterThan(at('P Dear Dr. Vance,'));
    expect(at('P Marta Kowalczyk')).toBeGreaterThan(at('P Kind regards,'));
    // the footer on every page and the running head on the second are drawn, not read
    for (const [i, p] of s.pages.entries()) {
      expect(p.artifacts.join(' ')).toContain(`Page ${i + 1} of 2`);
      expect(reading(p.tree).join(' ')).not.toMatch(/Page \d of|410 Harbor Street/);
    }
    expect(s.pages[1].artifacts.join(' ')).toContain('Northwind Studio · Letter to Dr. Eleanor Vance');
  });

  it('gives the invoice table header cells and the postcard picture its alt text', async () => {
    const invoice = await example('invoice');
    expect(reading(invoice.pages[0].tree).slice(0, 3)).toEqual([
      'H1 INVOICE',
      'P No. NW-2026-0142',
      'Figure Northwind Studio',
    ]);
    expect(reading(invoice.pages[0].tree).filter((r) => r.startsWith('TH '))).toEqual([
      'TH #',
      'TH Description',
      'TH Qty',
      'TH Unit price',
      'TH Amount',
    ]);
    const postcard = await example('postcard');
    expect(postcard.pages[0].tree[0]).toMatchObject({ role: 'Figure', alt: expect.stringMatching(/\S/) });
  });

  it('writes an untagged PDF with tagged="false", and refuses a language that is no language tag', async () => {
    const s = await structure('<document tagged="false"><body><h1>Title</h1><p>Text</p></body></document>');
    expect(s.marked).toBe(false);
    expect(s.pages[0].tree).toEqual([]);
    await expect(
      loadTemplate('<document lang="english please"><body><p>x</p></body></document>'),
    ).rejects.toMatchObject({ code: 'template_invalid' });
  });
});
