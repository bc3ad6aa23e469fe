import { InvalidValueError, MissingVariablesError, UnsupportedCharacterError } from '../../src/errors';
import { loadTemplate, renderTemplate, variables, type AssetResolver, type RenderWarning } from '../../src/templates';
import { jpeg, liberationSans, png, pngDataUri } from '../support/fixtures';
import { find, fontPrograms as fonts, readPdf, run } from '../support/pdf';

async function render(xml: string, values: Record<string, string> = {}, assets?: AssetResolver) {
  const t = await loadTemplate(xml, { assets });
  return readPdf(await renderTemplate(t, values, { now: new Date('2026-11-22T10:00:00Z') }));
}

const doc = (body: string, attrs = '') => `<document${attrs ? ' ' + attrs : ''}><body>${body}</body></document>`;
const words = (n: number, prefix = 'w') => Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(' ');
const close = (a: number, b: number, tolerance = 0.6) => Math.abs(a - b) <= tolerance;

describe('renderTemplate() page setup', () => {
  it.each([
    ['letter', 612, 792],
    ['legal', 612, 1008],
    ['a4', 595.28, 841.89],
    ['postcard-6x4', 432, 288],
    ['postcard-9x6', 648, 432],
    ['postcard-11x6', 792, 432],
    ['5in 7in', 360, 504],
    ['100mm x 150mm', 283.46, 425.2],
  ])('draws %s pages at %d x %d points', async (size, w, h) => {
    const pdf = await render(doc('<p>x</p>', `size="${size}"`));
    expect(pdf.pages[0].width).toBeCloseTo(w, 1);
    expect(pdf.pages[0].height).toBeCloseTo(h, 1);
  });

  it('turns a page sideways with orientation="landscape"', async () => {
    const pdf = await render(doc('<p>x</p>', 'size="letter" orientation="landscape"'));
    expect([pdf.pages[0].width, pdf.pages[0].height]).toEqual([792, 612]);
  });

  it('starts the text at the top-left margin', async () => {
    const pdf = await render(doc('<p>Start here</p>', 'margin="1in 0.5in 1in 2in" font-size="10"'));
    const it = find(pdf.pages[0], 'Start');
    expect(it.x).toBeCloseTo(144, 1);
    expect(it.y).toBeGreaterThan(72);
    expect(it.y).toBeLessThan(72 + 14);
  });

  it('keeps every line of a long paragraph inside the margins and flows it onto new pages by itself', async () => {
    const text = words(1500);
    const pdf = await render(doc(`<p>${text}</p>`, 'margin="50 60 70 80"'));
    expect(pdf.pages.length).toBeGreaterThan(2);
    for (const page of pdf.pages) {
      for (const it of page.items.filter((i) => i.str.trim())) {
        expect(it.x).toBeGreaterThanOrEqual(80 - 0.01);
        expect(it.x + it.width).toBeLessThanOrEqual(612 - 60 + 0.5);
        expect(it.y).toBeGreaterThan(50);
        expect(it.y).toBeLessThan(792 - 70);
      }
    }
    // no word lost, none repeated, all in order
    expect(pdf.text.split(/\s+/).filter(Boolean)).toEqual(text.split(' '));
  });

  it('keeps every word of a text with more different words than a style keeps shaped (4,096)', async () => {
    const text = words(5000, 'x');
    const pdf = await render(doc(`<p>${text}</p>`));
    expect(pdf.text.split(/\s+/).filter(Boolean)).toEqual(text.split(' '));
  });

  it('starts a new page at <page-break/>', async () => {
    const pdf = await render(doc('<p>first</p><page-break/><p>second</p><page-break/><p>third</p>'));
    expect(pdf.pages.map((p) => p.text)).toEqual(['first', 'second', 'third']);
  });

  it('writes the title, author and subject, with merge fields, into the document information', async () => {
    const pdf = await render(doc('<p>x</p>', 'title="Invoice {{n}}" author="ACME" subject="For {{who}}"'), {
      n: '42',
      who: 'Zoë',
    });
    expect(pdf.info.Title).toBe('Invoice 42');
    expect(pdf.info.Author).toBe('ACME');
    expect(pdf.info.Subject).toBe('For Zoë');
  });
});

describe('renderTemplate() text', () => {
  it('draws runs in the font family, size, colour and style they ask for', async () => {
    const pdf = await render(
      doc(
        '<p>plain <b>bold</b> <i>italic</i> <b><i>both</i></b> <span font="serif" font-size="17" color="#336699">serif</span> <span font="mono" bold="true">mono</span></p>',
      ),
    );
    const page = pdf.pages[0];
    expect(run(page, 'plain')).toMatchObject({ font: 'DejaVuSans', size: 11 });
    expect(run(page, 'bold').font).toBe('DejaVuSans-Bold');
    expect(run(page, 'italic').font).toBe('DejaVuSans-Oblique');
    expect(run(page, 'both').font).toBe('DejaVuSans-BoldOblique');
    expect(run(page, 'serif')).toMatchObject({ font: 'DejaVuSerif', size: 17, color: '#336699' });
    expect(run(page, 'mono').font).toBe('DejaVuSansMono-Bold');
  });

  it('inherits the document font, size and colour, and lets a paragraph override them', async () => {
    const pdf = await render(
      doc(
        '<p>inherited</p><p font="serif" font-size="14" color="red">own</p>',
        'font="mono" font-size="9" color="#00ff00"',
      ),
    );
    expect(run(pdf.pages[0], 'inherited')).toMatchObject({ font: 'DejaVuSansMono', size: 9, color: '#00ff00' });
    expect(run(pdf.pages[0], 'own')).toMatchObject({ font: 'DejaVuSerif', size: 14, color: '#ff0000' });
  });

  it('underlines <u> text with a line under its baseline', async () => {
    const pdf = await render(doc('<p><u>under</u></p>'));
    const word = find(pdf.pages[0], 'under');
    const line = pdf.pages[0].shapes.find(
      (s) => s.paint === 'stroke' && close(s.x, word.x) && s.y > word.y && s.y < word.y + 4,
    );
    expect(line).toBeDefined();
    expect(line!.width).toBeCloseTo(word.width, 0);
  });

  it('keeps words joined by a no-break space (&#160;) on one line, in template text and in values', async () => {
    // one paragraph per length of the words before the phone number: some length puts the line's end
    // between "(503)" and "555-0142"
    const paragraphs = (sep: string) =>
      Array.from({ length: 30 }, (_, n) => `<p>${words(n + 1, 'ab')} (503)${sep}555-0142 {{phone}}</p>`).join('');
    const endsBeforeNumber = (pdf: Awaited<ReturnType<typeof render>>) =>
      pdf.pages.flatMap((p) => p.text.split('\n')).filter((line) => /\((503|971)\)$/.test(line.trimEnd())).length;
    const spaced = await render(doc(paragraphs(' '), 'size="5in 7in"'), { phone: '(971) 555-0199' });
    expect(endsBeforeNumber(spaced)).toBeGreaterThan(0); // a plain space breaks there
    const joined = await render(doc(paragraphs('&#160;'), 'size="5in 7in"'), { phone: '(971)\u00a0555-0199' });
    expect(endsBeforeNumber(joined)).toBe(0);
    expect(joined.pages.flatMap((p) => p.text.split('\n')).join(' ')).toContain('555-0142');
  });

  it.each([
    [
      'a closing chained to its signature',
      (keep: string) => `<p ${keep}>Kind regards,</p><p ${keep}>Signer Name</p><p>Signer Title</p>`,
      'Kind regards,',
      'Signer Name',
    ],
    [
      'a figure and its caption',
      (keep: string) =>
        `<image src="${pngDataUri}" width="1.5in" alt="Figure image" ${keep}/><p>Caption of the figure</p>`,
      'Figure image',
      'Caption of',
    ],
    [
      'a heading (kept by default) and its text',
      (keep: string) => `<h2 ${keep}>Heading Here</h2><p>First line of text</p>`,
      'Heading Here',
      'First line',
    ],
  ])('keeps %s on one page (keep-with-next), wherever the page ends', async (_, tail, first, next) => {
    // one document per amount of text before the pair: some amount ends a page between the two
    const pageOf = (pdf: Awaited<ReturnType<typeof render>>, needle: string) =>
      pdf.pages.findIndex((p) => p.text.includes(needle));
    const split = async (keep: string) => {
      let count = 0;
      for (let n = 20; n < 50; n++) {
        const filler = Array.from({ length: n }, (_, i) => `<p>Filler line ${i}</p>`).join('');
        const pdf = await render(doc(filler + tail(keep), 'size="5in 7in"'));
        // nothing lost or drawn twice when a page is laid out again
        const all = pdf.pages.map((p) => p.text).join('\n');
        expect(all.split(first).length - 1).toBe(1);
        expect(all.split(`Filler line ${n - 1}`).length - 1).toBe(1);
        if (pageOf(pdf, first) !== pageOf(pdf, next)) count++;
      }
      return count;
    };
    expect(await split('keep-with-next="false"')).toBeGreaterThan(0); // without it, a page ends between them
    expect(await split(first === 'Heading Here' ? '' : 'keep-with-next="true"')).toBe(0);
  });

  it('keeps the last lines of a long paragraph with what it is kept with, and leaves the rest where it was', async () => {
    const body = words(120, 'pp'); // about ten lines on a 5 in page
    const pageOf = (pdf: Awaited<ReturnType<typeof render>>, needle: string) =>
      pdf.pages.findIndex((p) => p.text.includes(needle));
    let apart = 0;
    for (let n = 0; n < 40; n++) {
      const filler = Array.from({ length: n }, (_, i) => `<p>Filler line ${i}</p>`).join('');
      const tail = (keep: string) =>
        `<p ${keep}>${body}</p><p keep-with-next="true">Kind regards,</p><p>Signer Name</p>`;
      const loose = await render(doc(filler + tail('keep-with-next="false"'), 'size="5in 7in"'));
      const kept = await render(doc(filler + tail('keep-with-next="true"'), 'size="5in 7in"'));
      const closing = pageOf(kept, 'Kind regards,');
      // the closing's page holds lines of the paragraph before it, never the closing alone
      const page = kept.pages[closing].text;
      expect({ n, before: page.indexOf('pp') >= 0 && page.indexOf('pp') < page.indexOf('Kind regards,') }).toEqual({
        n,
        before: true,
      });
      // the paragraph starts where it did without the keep: it is not moved whole
      expect({ n, start: pageOf(kept, 'pp0 ') }).toEqual({ n, start: pageOf(loose, 'pp0 ') });
      // nothing lost or drawn twice
      const all = kept.pages.map((p) => p.text).join(' ');
      expect(all.split('pp119').length - 1).toBe(1);
      if (pageOf(loose, 'Kind regards,') !== pageOf(loose, 'pp119')) apart++;
    }
    expect(apart).toBeGreaterThan(0); // without the keep, some amount of filler leaves the closing alone
  });

  it('leaves no single line of a paragraph alone at the bottom or top of a page (orphans and widows, 2 by default)', async () => {
    // the paragraph's lines on each page it is on, for every start 5 pt lower than the last
    const splits = async (attrs: string) => {
      const out: number[][] = [];
      for (let gap = 0; gap < 360; gap += 5) {
        const body = `<p>Before</p><spacer height="${gap}"/><p>${words(70, 'pp')}</p><p>After</p>`;
        const pdf = await render(doc(body, `size="5in 7in" ${attrs}`));
        const perPage = pdf.pages.map((p) => p.text.split('\n').filter((l) => /\bpp\d/.test(l)).length);
        expect(
          pdf.pages
            .map((p) => p.text)
            .join(' ')
            .match(/\bpp\d+/g),
        ).toEqual(words(70, 'pp').split(' '));
        out.push(perPage.filter((c) => c > 0));
      }
      return out;
    };
    const lone = (pages: number[][]) => pages.filter((p) => p.length > 1 && (p[0] < 2 || p[p.length - 1] < 2)).length;
    const loose = await splits('orphans="1" widows="1"');
    expect(loose.some((p) => p.length > 1 && p[0] === 1)).toBe(true); // an orphan without the rule
    expect(loose.some((p) => p.length > 1 && p[p.length - 1] === 1)).toBe(true); // a widow without it
    const kept = await splits('');
    expect(kept.filter((p) => p.length > 1).length).toBeGreaterThan(0); // it still splits across pages
    expect(lone(kept)).toBe(0);
    const three = await splits('orphans="3" widows="3"');
    expect(three.filter((p) => p.length > 1 && (p[0] < 3 || p[p.length - 1] < 3)).length).toBe(0);
  });

  it('aligns lines left, right, center and justify', async () => {
    const long = words(60, 'word');
    const pdf = await render(
      doc(
        `<p align="left">Left</p><p align="right">Right</p><p align="center">Center</p><p align="justify">${long}</p>`,
        'margin="72"',
      ),
    );
    const page = pdf.pages[0];
    expect(find(page, 'Left').x).toBeCloseTo(72, 1);
    const r = find(page, 'Right');
    expect(r.x + r.width).toBeCloseTo(612 - 72, 0);
    const c = find(page, 'Center');
    expect(c.x + c.width / 2).toBeCloseTo(306, 0);
    // every justified line but the last reaches both margins
    const lines = new Map<number, { min: number; max: number }>();
    for (const it of page.items.filter((i) => i.str.startsWith('word'))) {
      const key = Math.round(it.y);
      const l = lines.get(key) ?? { min: Infinity, max: 0 };
      lines.set(key, { min: Math.min(l.min, it.x), max: Math.max(l.max, it.x + it.width) });
    }
    const ys = [...lines.keys()].sort((a, b) => a - b);
    expect(ys.length).toBeGreaterThan(2);
    for (const y of ys.slice(0, -1)) {
      expect(lines.get(y)!.min).toBeCloseTo(72, 0);
      expect(lines.get(y)!.max).toBeCloseTo(540, 0);
    }
    expect(lines.get(ys[ys.length - 1])!.max).toBeLessThan(530);
  });

  it('keeps line spacing: baselines are line-height x font size apart', async () => {
    const pdf = await render(doc(`<p font-size="10" line-height="2">${words(200)}</p>`));
    const ys = [...new Set(pdf.pages[0].items.map((i) => Math.round(i.y * 100) / 100))].sort((a, b) => a - b);
    for (let i = 1; i < ys.length; i++) expect(ys[i] - ys[i - 1]).toBeCloseTo(20, 1);
  });

  it('breaks lines at <br/> and at line breaks inside values', async () => {
    const pdf = await render(doc('<p>one<br/>two {{addr}}</p>'), { addr: 'Main St 1\nSpringfield' });
    const ys = ['one', 'two', 'Springfield'].map((w) => find(pdf.pages[0], w).y);
    expect(ys[1]).toBeGreaterThan(ys[0]);
    expect(ys[2]).toBeGreaterThan(ys[1]);
  });

  it('cuts a word longer than the line between characters instead of running off the page', async () => {
    const pdf = await render(doc('<p>{{v}}</p>', 'size="postcard-6x4" margin="20"'), { v: 'x'.repeat(400) });
    const items = pdf.pages[0].items;
    expect(items.length).toBeGreaterThan(1);
    for (const it of items) expect(it.x + it.width).toBeLessThanOrEqual(432 - 20 + 0.5);
    expect(items.map((i) => i.str).join('')).toBe('x'.repeat(400));
  });

  it('skips a paragraph whose text is all empty values', async () => {
    const pdf = await render(doc('<p>before</p><p>{{empty}}</p><p>after</p>'), { empty: '' });
    expect(pdf.pages[0].text).toBe('before\nafter');
  });
});

describe('renderTemplate() headers and footers', () => {
  const xml = `<document>
    <header><p>Header of {{title}}</p></header>
    <footer><p align="center">Page {{page}} of {{pages}}</p></footer>
    <body><p>${words(2500)}</p></body></document>`;

  it('repeats the header and footer on every page with its page number', async () => {
    const pdf = await render(xml, { title: 'Test' });
    const n = pdf.pages.length;
    expect(n).toBeGreaterThan(2);
    pdf.pages.forEach((page, i) => {
      const header = find(page, 'Header of Test');
      const footer = find(page, `Page ${i + 1} of ${n}`);
      const body = page.items.filter((it) => it.str.startsWith('w'));
      expect(Math.min(...body.map((b) => b.y))).toBeGreaterThan(header.y);
      expect(Math.max(...body.map((b) => b.y))).toBeLessThan(footer.y);
      expect(footer.y).toBeLessThan(792 - 72 + 1);
    });
  });

  it('draws a first-page header only on page one and a running header on the others', async () => {
    const pdf = await render(`<document>
      <header on="first"><p>Letterhead</p></header>
      <header on="rest"><p>Continued</p></header>
      <body><p>a</p><page-break/><p>b</p><page-break/><p>c</p></body></document>`);
    expect(pdf.pages.map((p) => p.text.split('\n')[0])).toEqual(['Letterhead', 'Continued', 'Continued']);
  });

  it('does not count page and pages as variables', async () => {
    expect(variables(await loadTemplate(xml))).toEqual(['title']);
  });
});

describe('renderTemplate() images, lines and rectangles', () => {
  const assets: AssetResolver = async (p) =>
    p === 'img/photo.jpg' ? new Uint8Array(jpeg) : p === 'logo.png' ? new Uint8Array(png) : undefined;

  it('draws a PNG from a data URI at the width asked for, keeping its aspect ratio', async () => {
    const pdf = await render(doc(`<image src="${pngDataUri}" width="2in"/>`, 'margin="72"'));
    const [img] = pdf.pages[0].images;
    expect(img.x).toBeCloseTo(72, 1);
    expect(img.y).toBeCloseTo(72, 1);
    expect(img.width).toBeCloseTo(144, 1);
    expect(img.height).toBeCloseTo((144 * 180) / 720, 1);
  });

  it('draws a JPEG asset shipped beside the template, centred, and a PNG asset placed on the page', async () => {
    const pdf = await render(
      doc(
        '<image src="img/photo.jpg" width="50%" align="center"/><image src="logo.png" x="10" y="20" width="100" height="25"/>',
      ),
      {},
      assets,
    );
    const [photo, logo] = pdf.pages[0].images;
    expect(photo.width).toBeCloseTo(234, 1);
    expect(photo.x + photo.width / 2).toBeCloseTo(306, 1);
    expect(photo.height / photo.width).toBeCloseTo(1200 / 1800, 2);
    expect(logo).toMatchObject({ x: 10, y: 20 });
    expect(logo.width).toBeCloseTo(100, 1);
  });

  it('writes alternative text, with merge fields, as invisible text over the image', async () => {
    const pdf = await render(doc(`<image src="${pngDataUri}" width="200" alt="Logo of {{company}}"/>`), {
      company: 'Ωmega Ltd',
    });
    expect(pdf.pages[0].text).toContain('Logo of Ωmega Ltd');
    expect(run(pdf.pages[0], 'Logo of').invisible).toBe(true);
  });

  it('draws a rule across the flow, a placed line, and filled and bordered rectangles', async () => {
    const pdf = await render(
      doc(
        '<p>above</p><line thickness="2" color="#ff0000"/><rect height="30" fill="#00ff00" border="#0000ff" border-width="1"/><line x1="10" y1="10" x2="200" y2="10"/><rect x="300" y="400" width="50" height="60" fill="#123456"/>',
        'margin="72"',
      ),
    );
    const shapes = pdf.pages[0].shapes;
    const rule = shapes.find((s) => s.paint === 'stroke' && s.stroke === '#ff0000');
    expect(rule).toBeDefined();
    expect(rule!.x).toBeCloseTo(72, 1);
    expect(rule!.width).toBeCloseTo(468, 1);
    expect(rule!.y).toBeGreaterThan(find(pdf.pages[0], 'above').y);
    const box = shapes.find((s) => s.fill === '#00ff00');
    expect(box).toMatchObject({ paint: 'fillStroke', stroke: '#0000ff' });
    expect(box!.width).toBeCloseTo(468, 1);
    expect(box!.height).toBeCloseTo(30, 1);
    expect(box!.y).toBeGreaterThan(rule!.y);
    const placed = shapes.find((s) => s.paint === 'stroke' && close(s.y, 10) && close(s.x, 10));
    expect(placed!.width).toBeCloseTo(190, 1);
    const abs = shapes.find((s) => s.fill === '#123456');
    expect(abs).toMatchObject({ x: 300, y: 400, width: 50, height: 60 });
  });
});

describe('renderTemplate() tables', () => {
  const table = (rows: string, attrs = '') => `<table ${attrs}>
      <col width="1in"/><col width="*"/><col width="2*" align="right"/>
      <thead><tr><td>Code</td><td>Name</td><td>Price</td></tr></thead>
      ${rows}
    </table>`;

  it('sizes columns: fixed, then shares of the rest, and aligns cells by column', async () => {
    const pdf = await render(doc(table('<tr><td>A1</td><td>Apple</td><td>9.99</td></tr>'), 'margin="72"'));
    const page = pdf.pages[0];
    // 468pt wide: 72 for the first column, 132 and 264 for the shares
    expect(find(page, 'A1').x).toBeCloseTo(72 + 5, 1);
    expect(find(page, 'Apple').x).toBeCloseTo(144 + 5, 1);
    const price = find(page, '9.99');
    expect(price.x + price.width).toBeCloseTo(540 - 5, 0);
    expect(run(page, 'Code').font).toBe('DejaVuSans-Bold');
  });

  it('draws a border around every cell with rules="all"', async () => {
    const pdf = await render(
      doc(table('<tr><td>a</td><td>b</td><td>c</td></tr>', 'border="1" border-color="#ff00ff"'), 'margin="72"'),
    );
    const borders = pdf.pages[0].shapes.filter((s) => s.stroke === '#ff00ff');
    expect(borders).toHaveLength(6);
    expect(borders.map((b) => Math.round(b.width)).slice(0, 3)).toEqual([72, 132, 264]);
  });

  it('wraps long cell text inside its cell, making the row taller', async () => {
    const long = words(40, 'cell');
    const pdf = await render(
      doc(
        table(`<tr><td>X</td><td>${long}</td><td>1</td></tr><tr><td>after</td><td>y</td><td>2</td></tr>`),
        'margin="72"',
      ),
    );
    const page = pdf.pages[0];
    const cellWords = page.items.filter((i) => i.str.startsWith('cell'));
    expect(new Set(cellWords.map((w) => Math.round(w.y))).size).toBeGreaterThan(3);
    for (const w of cellWords) {
      expect(w.x).toBeGreaterThanOrEqual(144);
      expect(w.x + w.width).toBeLessThanOrEqual(276 + 0.5);
    }
    expect(find(page, 'after').y).toBeGreaterThan(Math.max(...cellWords.map((w) => w.y)));
  });

  it('breaks across pages, repeating the header row, with every row exactly once and in order', async () => {
    const items = Array.from({ length: 120 }, (_, i) => ({ code: `C${i}`, name: `Item ${i}`, price: `${i}.00` }));
    const pdf = await render(
      doc(
        table(
          '<each var="items" as="it"><tr><td>{{it.code}}</td><td>{{it.name}}</td><td>{{it.price}}</td></tr></each>',
          'stripe="#eeeeee"',
        ),
      ),
      { items: JSON.stringify(items) },
    );
    expect(pdf.pages.length).toBeGreaterThan(2);
    const codes: string[] = [];
    for (const page of pdf.pages) {
      const header = find(page, 'Code');
      const rows = page.items.filter((i) => /^C\d+$/.test(i.str));
      expect(rows.length).toBeGreaterThan(0);
      for (const r of rows) {
        expect(r.y).toBeGreaterThan(header.y);
        expect(r.y).toBeLessThan(792 - 72);
      }
      codes.push(...rows.map((r) => r.str));
    }
    expect(codes).toEqual(items.map((i) => i.code));
  });

  it('spans cells over columns with colspan', async () => {
    const pdf = await render(
      doc(table('<tr><td colspan="2" align="right">Total</td><td>10.00</td></tr>'), 'margin="72"'),
    );
    const total = find(pdf.pages[0], 'Total');
    expect(total.x + total.width).toBeCloseTo(72 + 72 + 132 - 5, 0);
  });

  it('moves a table with keep-together to the next page instead of splitting it', async () => {
    const filler = `<spacer height="600"/>`;
    const rows = Array.from({ length: 8 }, (_, i) => `<tr><td>K${i}</td><td>x</td><td>1</td></tr>`).join('');
    const pdf = await render(doc(`<p>start</p>${filler}${table(rows, 'keep-together="true"')}`));
    expect(pdf.pages).toHaveLength(2);
    expect(pdf.pages[1].text).toContain('K0');
    expect(pdf.pages[1].text).toContain('K7');
  });
});

describe('renderTemplate() conditions and lists', () => {
  const xml = doc('<p>always</p><if var="note"><p>Note: {{note}}</p></if><if not="note"><p>No note</p></if>');

  it('shows an <if> block only when its variable is not empty', async () => {
    expect((await render(xml, { note: 'hello' })).text).toBe('always\nNote: hello');
    expect((await render(xml, { note: '' })).text).toBe('always\nNo note');
    expect((await render(xml, { note: '   ' })).text).toBe('always\nNo note');
  });

  it('repeats <each> for every item of a JSON list, with conditions on item fields', async () => {
    const pdf = await render(
      doc('<each var="people" as="p"><p>{{p.name}}<if var="p.role"> ({{p.role}})</if></p></each>'),
      {
        people: JSON.stringify([
          { name: 'Ann', role: 'CEO' },
          { name: 'Bob', role: '' },
          { name: 'Cy', role: 'CTO' },
        ]),
      },
    );
    expect(pdf.text).toBe('Ann (CEO)\nBob\nCy (CTO)');
  });

  it('repeats <each> inside text, over a list of plain strings', async () => {
    const pdf = await render(doc('<p>Tags:<each var="tags" as="t"> [{{t}}]</each></p>'), {
      tags: '["red","green","blue"]',
    });
    expect(pdf.text).toBe('Tags: [red] [green] [blue]');
  });

  it('refuses a list value that is not a JSON array, naming the variable', async () => {
    const t = await loadTemplate(doc('<each var="rows"><p>{{item.x}}</p></each>'));
    await expect(renderTemplate(t, { rows: '{"x":1}' })).rejects.toMatchObject({
      code: 'invalid_value',
      variable: 'rows',
    });
    await expect(renderTemplate(t, { rows: 'not json' })).rejects.toBeInstanceOf(InvalidValueError);
  });

  it('refuses a list item without a field the template uses, naming the item', async () => {
    const t = await loadTemplate(doc('<each var="rows"><p>{{item.x}}</p></each>'));
    await expect(renderTemplate(t, { rows: '[{"x":"1"},{"y":"2"}]' })).rejects.toMatchObject({
      code: 'invalid_value',
      variable: 'rows[1].x',
    });
  });
});

describe('renderTemplate() merge fields', () => {
  it('prints values literally: markup and merge fields inside a value are text', async () => {
    const pdf = await render(doc('<p>A {{a}} B</p>'), {
      a: '</p><image src="x"/> {{b}} &amp; <b>no</b>',
      b: 'SHOULD NOT APPEAR',
    });
    expect(pdf.text).toBe('A </p><image src="x"/> {{b}} &amp; <b>no</b> B');
    expect(pdf.pages[0].images).toHaveLength(0);
    expect(pdf.text).not.toContain('SHOULD NOT APPEAR');
  });

  it('lists variables in order of first use, each once, without list item fields', async () => {
    const t = await loadTemplate(`<document title="{{title}}"><header><p>{{company}} {{page}}</p></header>
      <body><p>{{greeting}} {{name}}</p><if var="extra"><p>{{name}}</p></if>
      <image src="${pngDataUri}" alt="{{alt_text}}"/>
      <each var="rows" as="r"><p>{{r.x}} {{suffix}}</p></each></body></document>`);
    expect(variables(t)).toEqual(['title', 'company', 'greeting', 'name', 'extra', 'alt_text', 'rows', 'suffix']);
  });

  it('reports every missing variable at once', async () => {
    const t = await loadTemplate(doc('<p>{{a}} {{b}} {{c}} {{d}}</p>'));
    const err = await renderTemplate(t, { b: '' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MissingVariablesError);
    expect((err as MissingVariablesError).code).toBe('missing_variables');
    expect((err as MissingVariablesError).missing).toEqual(['a', 'c', 'd']);
  });
});

describe('optional variables: {{name | default: "text"}}', () => {
  it('may be left out: the default stands in wherever the variable is used, a given value wins', async () => {
    const xml = doc(
      `<p>Dear {{name}}</p><if var="company"><p>at {{company | default: ""}}</p></if><p>valid until {{until | default: 'Friday'}}; {{until}}</p>`,
    );
    const t = await loadTemplate(xml);
    expect(variables(t)).toEqual(['name', 'company', 'until']);
    expect(t.defaults).toEqual({ company: '', until: 'Friday' });
    const bare = await render(xml, { name: 'Ada' });
    expect(bare.text).toContain('valid until Friday; Friday');
    expect(bare.text).not.toContain('at ');
    const given = await render(xml, { name: 'Ada', company: 'Acme', until: 'Monday' });
    expect(given.text).toContain('at Acme');
    expect(given.text).toContain('valid until Monday; Monday');
    // the required one is still required
    await expect(renderTemplate(t, {})).rejects.toMatchObject({ code: 'missing_variables', missing: ['name'] });
  });

  it.each([
    ['two different defaults', '<p>{{a | default: "x"}} {{a | default: "y"}}</p>'],
    ['a filter that does not exist', '<p>{{a | upcase}}</p>'],
    ['a default without quotes', '<p>{{a | default: x}}</p>'],
    ['a default on a list item field', '<each var="rows" as="r"><p>{{r.x | default: ""}}</p></each>'],
  ])('refuses %s as template_invalid', async (_what, body) => {
    await expect(loadTemplate(doc(body))).rejects.toMatchObject({ code: 'template_invalid' });
  });
});

describe('placed text that does not fit its box', () => {
  const long = words(100, 'word');
  const box = (attrs: string) =>
    doc(`<p x="36" y="36" width="200" height="60" ${attrs}>{{message}}</p><p x="36" y="300" width="200">footer</p>`);
  const draw = async (xml: string, values: Record<string, string>) => {
    const warnings: RenderWarning[] = [];
    const pdf = await readPdf(
      await renderTemplate(await loadTemplate(xml), values, { now: new Date('2026-11-22T10:00:00Z'), warnings }),
    );
    return { pdf, warnings };
  };

  it('is drawn whole by default, with a text_overflow warning naming the variable', async () => {
    const { pdf, warnings } = await draw(box(''), { message: long });
    expect(warnings).toEqual([
      {
        code: 'text_overflow',
        variable: 'message',
        message: expect.stringMatching(/needs \d+ lines; its box has room for \d+/),
      },
    ]);
    // all of it, below its box
    expect(pdf.text).toContain('word99');
  });

  it('fits without a warning when it fits', async () => {
    const { warnings } = await draw(box(''), { message: 'short' });
    expect(warnings).toEqual([]);
  });

  it('shrinks to fit with overflow="shrink", keeping every word, and warns only when even the smallest size is too big', async () => {
    const medium = words(30, 'word');
    const shrunk = await draw(box('overflow="shrink"'), { message: medium });
    expect(shrunk.warnings).toEqual([]);
    expect(shrunk.pdf.text).toContain('word29');
    // smaller than the 11 pt it was written in, not below the 6 pt floor
    const size = run(shrunk.pdf.pages[0], 'word0').size;
    expect(size).toBeLessThan(11);
    expect(size).toBeGreaterThanOrEqual(6);
    expect(run(shrunk.pdf.pages[0], 'footer').size).toBe(11);
    const tooLong = await draw(box('overflow="shrink" min-font-size="8"'), { message: long });
    expect(tooLong.warnings).toEqual([
      expect.objectContaining({
        code: 'text_overflow',
        variable: 'message',
        message: expect.stringContaining('even at 8 pt'),
      }),
    ]);
  });

  it('is refused with overflow="error" as 422 text_overflow naming the variable', async () => {
    await expect(draw(box('overflow="error"'), { message: long })).rejects.toMatchObject({
      code: 'text_overflow',
      details: [{ field: 'message', code: 'text_overflow' }],
    });
  });

  it('refuses height and overflow on text in the flow, which goes on to the next page instead', async () => {
    await expect(loadTemplate(doc('<p height="20">x</p>'))).rejects.toMatchObject({ code: 'template_invalid' });
    await expect(loadTemplate(doc('<p overflow="shrink">x</p>'))).rejects.toMatchObject({ code: 'template_invalid' });
  });
});

describe('renderTemplate() Unicode', () => {
  const samples = {
    latin: 'Crème brûlée, naïve façade, Øresund, Straße',
    latinExtended: 'Łódź, Čeština, Şişli, Đà Nẵng, Ħamrun, Ŧ',
    greek: 'Καλημέρα κόσμε, ΑΒΓΔ ωψχ',
    cyrillic: 'Съешь же ещё этих мягких французских булок, Ґґ Її Єє',
  };

  it.each(Object.entries(samples))('renders %s values exactly as given', async (_name, value) => {
    for (const font of ['sans', 'serif', 'mono']) {
      const pdf = await render(doc('<p font="{{font}}">{{v}}</p>'.replace('{{font}}', font)), { v: value });
      expect(pdf.pages[0].text).toBe(value);
      expect(pdf.pages[0].runs.every((r) => r.font.startsWith('DejaVu'))).toBe(true);
    }
  });

  it('reads back every character of a font subset of hundreds of glyphs, whichever bytes their codes are', async () => {
    // codes are the glyphs' places in the subset, two bytes each in a literal string: with this many,
    // some are the bytes a string escapes (parentheses, backslash, line ends) and some are above 255
    const range = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => String.fromCharCode(from + i));
    const chars = [
      ...range(0x21, 0x7e),
      ...range(0xc0, 0x148),
      ...range(0x391, 0x3a1),
      ...range(0x3a3, 0x3a9),
      ...range(0x410, 0x44f),
    ];
    const value = Array.from({ length: Math.ceil(chars.length / 12) }, (_, i) =>
      chars.slice(i * 12, i * 12 + 12).join(''),
    ).join(' ');
    const pdf = await render(doc('<p>{{v}}</p>'), { v: value });
    expect(chars.length).toBeGreaterThan(300);
    expect(pdf.text.replace(/\s+/g, '')).toBe(chars.join(''));
  });

  it('refuses a character no font has, naming the variable and the character', async () => {
    const t = await loadTemplate(doc('<p>{{city}}</p>'));
    const err = await renderTemplate(t, { city: 'Tokyo 東京' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedCharacterError);
    expect(err).toMatchObject({ code: 'unsupported_character', variable: 'city', character: '東', codePoint: 0x6771 });
  });

  it('draws a character outside the Basic Multilingual Plane the font has, as one character', async () => {
    const value = 'double-struck \u{1D538}, smile \u{1F600}';
    const pdf = await render(doc('<p>{{v}}</p>'), { v: value });
    expect(pdf.pages[0].text).toBe(value);
  });

  it('names a character outside the Basic Multilingual Plane whole, after text it could draw', async () => {
    const t = await loadTemplate(doc('<p>{{rune}}</p>'));
    const err = await renderTemplate(t, { rune: 'Gothic hwair: \u{10348}' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedCharacterError);
    expect(err).toMatchObject({
      code: 'unsupported_character',
      variable: 'rune',
      character: '\u{10348}',
      codePoint: 0x10348,
    });
  });

  it('draws with a font shipped beside the template and falls back to built-in sans for characters it lacks', async () => {
    const xml = `<document><fonts><font family="Brand" src="fonts/brand.ttf"/></fonts><body><p font="Brand">Hello {{v}}</p></body></document>`;
    const pdf = await render(xml, { v: 'Երևան ☃' }, async (p) =>
      p === 'fonts/brand.ttf' ? new Uint8Array(liberationSans) : undefined,
    );
    const page = pdf.pages[0];
    expect(page.text).toBe('Hello Երևան ☃');
    expect(run(page, 'Hello').font).toMatch(/^LiberationSans/);
    expect(run(page, 'Երևան').font).toBe('DejaVuSans');
  });

  it('keeps embedded fonts small by subsetting them', async () => {
    const t = await loadTemplate(doc('<p>Short text</p>'));
    const bytes = await renderTemplate(t, {});
    // DejaVu Sans is 740 KB whole; the subset for ten glyphs is a few KB
    expect(bytes.length).toBeLessThan(30_000);
  });
});

describe('font subsets made once and reused', () => {
  const fontPrograms = async (bytes: Uint8Array) => (await fonts(bytes)).map((f) => f.program);

  it('embeds the same whole font program in every document that uses the same glyphs', async () => {
    const t = await loadTemplate(doc('<p>Same glyphs <b>every time</b></p>'));
    const first = await fontPrograms(await renderTemplate(t, {}));
    expect(first).toHaveLength(2); // regular and bold
    for (const program of first) {
      expect([0x00010000, 0x74727565]).toContain(program.readUInt32BE(0)); // a TrueType font (1.0 or 'true')
      expect(program.length).toBeGreaterThan(1000);
    }
    // every later one embeds the kept subset
    for (let i = 0; i < 2; i++) expect(await fontPrograms(await renderTemplate(t, {}))).toEqual(first);
  });
});

describe('hyphenation', () => {
  const ENGLISH =
    'Construction drawings and site supervision would follow under a separate agreement, once the board has approved the design. We would begin with a four-week discovery phase in which we interview your staff and volunteers, study the visitor numbers from the last three seasons, and map how people move through the existing exhibition hall.';
  const GERMAN =
    'Die Bauüberwachung und die Ausführungsplanung folgen in einer gesonderten Vereinbarung, sobald der Verwaltungsrat den Entwurf genehmigt hat. Wir beginnen mit einer vierwöchigen Bestandsaufnahme, in der wir Mitarbeiterinnen und Freiwillige befragen und die Besucherzahlen der letzten drei Jahre untersuchen.';
  const lines = async (xml: string, values: Record<string, string> = {}) =>
    (await render(xml, values)).pages.flatMap((p) => p.text.split('\n')).map((l) => l.trim());
  /**
   * The text the lines say (a hyphen at a line's end joins the word it broke), and each break as
   * the word it broke and where in it.
   */
  const read = (ls: string[]) => {
    let text = '';
    const breaks: { word: string; at: number }[] = [];
    for (const l of ls) {
      if (text && !/\p{L}-$/u.test(ls[ls.indexOf(l) - 1] ?? '')) text += ' ';
      const broken = /\p{L}-$/u.test(l);
      text += broken ? l.slice(0, -1) : l;
      if (broken) breaks.push({ word: '', at: text.length });
    }
    for (const b of breaks) {
      const start = text.lastIndexOf(' ', b.at - 1) + 1;
      const end = text.slice(b.at).search(/[ ,.]|$/) + b.at;
      b.word = text.slice(start, end).replace(/[,.]$/, '');
      b.at -= start;
    }
    return { text, breaks };
  };
  /** Where a word may break by a language's patterns. */
  const allowed = async (lang: 'de' | 'en-us', word: string) => {
    const { hyphenateSync } = (await import(`hyphen/${lang}`)) as {
      hyphenateSync: (t: string, o: { hyphenChar: string }) => string;
    };
    const parts = hyphenateSync(word, { hyphenChar: '|' }).split('|');
    return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('').length);
  };
  const column = (p: string, attrs = '') => doc(`<p width="200" ${p}>{{text}}</p>`, attrs);

  it('hyphenates justified English text by its patterns and loses no letter', async () => {
    const { text, breaks } = read(await lines(column('align="justify"'), { text: ENGLISH }));
    expect(breaks.length).toBeGreaterThan(0);
    expect(text).toBe(ENGLISH);
    for (const b of breaks) expect(await allowed('en-us', b.word)).toContain(b.at);
    // the same paragraph with hyphenation off breaks only between words
    const off = await lines(column('align="justify" hyphenate="false"'), { text: ENGLISH });
    expect(read(off).breaks).toEqual([]);
    expect(off.join(' ')).toBe(ENGLISH);
  });

  it("hyphenates German by the document's language, where the German patterns allow", async () => {
    const { text, breaks } = read(await lines(column('align="justify"', 'lang="de"'), { text: GERMAN }));
    expect(breaks.length).toBeGreaterThan(0);
    expect(text).toBe(GERMAN);
    for (const b of breaks) expect(await allowed('de', b.word)).toContain(b.at);
  });

  it('leaves left-aligned text alone unless the document asks, and then hyphenates it too', async () => {
    expect(read(await lines(column(''), { text: ENGLISH })).breaks).toEqual([]);
    const on = read(await lines(column('', 'hyphenate="true"'), { text: ENGLISH }));
    expect(on.breaks.length).toBeGreaterThan(0);
    expect(on.text).toBe(ENGLISH);
  });

  it('never ends more than two lines in a row with a hyphen of its own', async () => {
    // long words in a narrow column: nearly every line would end in a hyphen
    const LONG =
      'international responsibilities characteristically demonstrating understanding organizational establishment interpretation approximately';
    const ls = await lines(doc('<p width="70" align="justify">{{text}}</p>'), { text: LONG });
    let run = 0;
    let most = 0;
    for (const l of ls) {
      run = /\p{L}-$/u.test(l) ? run + 1 : 0;
      most = Math.max(most, run);
    }
    expect(most).toBe(2);
    expect(read(ls).text).toBe(LONG);
  });

  it('breaks a value at its soft hyphens, with a hyphen drawn only where it breaks', async () => {
    const word = 'Donau\u00addampf\u00adschiff\u00adfahrts\u00adgesellschaft';
    // too long for the line: broken at the soft hyphens (left-aligned, so no patterns)
    const narrow = read(await lines(doc('<p width="110">{{text}}</p>'), { text: `Die ${word} fährt` }));
    expect(narrow.text).toBe('Die Donaudampfschifffahrtsgesellschaft fährt');
    expect(narrow.breaks.length).toBeGreaterThan(0);
    for (const b of narrow.breaks) expect([5, 10, 16, 22]).toContain(b.at);
    // room enough: one word, no hyphen and no soft hyphen drawn
    expect(await lines(doc('<p>{{text}}</p>'), { text: `Die ${word} fährt` })).toEqual([
      'Die Donaudampfschifffahrtsgesellschaft fährt',
    ]);
  });
});
