/**
 * Page images of a stored document (src/documents/images.ts): each page drawn once however often and
 * however concurrently it is asked for, a viewer's watermark laid over the drawn page (and looking
 * as the PDF's watermark does), the kept images within their bound, and a viewing session's asks
 * taken a few at a time.
 */
import { createCanvas, loadImage } from '@napi-rs/canvas';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { DRAWS_AT_ONCE, PageImages } from '../../src/documents/images';
import { PAGE_IMAGES_PER_SESSION, perSession } from '../../src/links/routes/viewer';
import { registry } from '../../src/metrics';
import { inProcessRenderer, type Renderer } from '../../src/templates/pool';
import { viewCopy, type Stamp } from '../../src/templates/viewcopy';

let pdf: Uint8Array;
beforeAll(async () => {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let n = 1; n <= 3; n++) {
    const page = doc.addPage([595, 842]);
    for (let y = 780; y > 60; y -= 40) page.drawText(`Page ${n}, line ${y}`, { x: 50, y, size: 14, font });
  }
  pdf = await doc.save();
});

/** The renderer, with what it was asked to do written down: `draw` (a page drawn from the PDF) or `stamp` (laid over a drawn one). */
function counting(): { renderer: Renderer; asked: string[]; reads: string[] } {
  const asked: string[] = [];
  const reads: string[] = [];
  return {
    asked,
    reads,
    renderer: {
      ...inProcessRenderer,
      view: (bytes, options) => {
        asked.push(`${options.drawn ? 'stamp' : 'draw'} ${options.page}`);
        return inProcessRenderer.view(bytes, options);
      },
    },
  };
}

const images = (renderer: Renderer, reads: string[], maxBytes = 64 << 20) =>
  new PageImages(
    renderer,
    async (id) => {
      reads.push(id);
      return pdf;
    },
    maxBytes,
  );

async function served(): Promise<Record<string, number>> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === 'paperlink_page_images_total');
  return Object.fromEntries(
    ((metric?.values ?? []) as { value: number; labels: { how?: string } }[]).map((v) => [v.labels.how, v.value]),
  );
}

const stamp = (text: string): Stamp => ({ text, position: 'center', opacity: 0.5, size: null, rotation: null });

/** A PNG's pixels, as RGBA bytes. */
async function pixelsOf(png: Uint8Array): Promise<{ data: Uint8ClampedArray; width: number }> {
  const image = await loadImage(Buffer.from(png));
  const canvas = createCanvas(image.width, image.height);
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  return { data: context.getImageData(0, 0, image.width, image.height).data, width: image.width };
}

/** Where a page image differs from the clean one (the watermark): how many pixels, their middle and their bounds. */
async function markOn(clean: Uint8Array, marked: Uint8Array) {
  const [a, b] = await Promise.all([pixelsOf(clean), pixelsOf(marked)]);
  let count = 0;
  let sx = 0;
  let sy = 0;
  // the middle of what is in the upper half of the page: where a line at an angle rises to
  let upper = 0;
  let ux = 0;
  const box = { left: Infinity, right: -Infinity, top: Infinity, bottom: -Infinity };
  for (let i = 0; i < a.data.length; i += 4) {
    if (Math.abs(a.data[i] - b.data[i]) <= 40) continue;
    const x = (i / 4) % a.width;
    const y = Math.floor(i / 4 / a.width);
    count++;
    sx += x;
    sy += y;
    if (y < a.data.length / 4 / a.width / 2) {
      upper++;
      ux += x;
    }
    box.left = Math.min(box.left, x);
    box.right = Math.max(box.right, x);
    box.top = Math.min(box.top, y);
    box.bottom = Math.max(box.bottom, y);
  }
  return { count, x: sx / count, y: sy / count, upperX: upper ? ux / upper : sx / count, box };
}

describe('page images', () => {
  it('draws a page once, however often and however many at once ask for it', async () => {
    const { renderer, asked, reads } = counting();
    const pages = images(renderer, reads);
    const before = await served();
    const first = await Promise.all(Array.from({ length: 20 }, () => pages.image('doc_a', 2)));
    const again = await pages.image('doc_a', 2);
    expect(asked).toEqual(['draw 2']);
    expect(reads).toEqual(['doc_a']);
    for (const image of [...first, again]) expect(Buffer.from(image).equals(Buffer.from(first[0]))).toBe(true);
    const after = await served();
    expect((after.drawn ?? 0) - (before.drawn ?? 0)).toBe(1);
    expect((after.kept ?? 0) - (before.kept ?? 0)).toBe(20);
    // another page is drawn for itself
    await pages.image('doc_a', 3);
    expect(asked).toEqual(['draw 2', 'draw 3']);
  });

  it("lays each viewer's watermark over the page drawn once, and keeps each stamped image", async () => {
    const { renderer, asked } = counting();
    const pages = images(renderer, []);
    const clean = await pages.image('doc_b', 1);
    const ann = await pages.image('doc_b', 1, stamp('ann@example.com'));
    const bob = await pages.image('doc_b', 1, stamp('bob@example.com'));
    await pages.image('doc_b', 1, stamp('ann@example.com'));
    // drawn once; each viewer's stamp laid over it once; turning back costs nothing
    expect(asked).toEqual(['draw 1', 'stamp 1', 'stamp 1']);
    expect(Buffer.from(ann).equals(Buffer.from(clean))).toBe(false);
    expect(Buffer.from(ann).equals(Buffer.from(bob))).toBe(false);
    // a first ask with a stamp draws the page and keeps it unstamped for the next viewer
    await pages.image('doc_b', 2, stamp('ann@example.com'));
    await pages.image('doc_b', 2, stamp('bob@example.com'));
    expect(asked.slice(3)).toEqual(['draw 2', 'stamp 2', 'stamp 2']);
  });

  it.each(['center', 'tiled', 'top', 'bottom'] as const)(
    'lays a %s watermark where the PDF has it',
    async (position) => {
      const mark: Stamp = {
        text: 'For ann@example.com · 2026-11-28 14:05 UTC',
        position,
        opacity: 0.6,
        size: null,
        rotation: null,
      };
      const pages = images(inProcessRenderer, []);
      const overlaid = await pages.image('doc_c', 1, mark);
      // the old way: the watermark drawn into a copy of the PDF, then the page drawn with it
      const stampedPdf = (await viewCopy(pdf, { stamp: mark })).bytes;
      const drawnWithIt = (await viewCopy(stampedPdf, { page: 1 })).bytes;
      const clean = await pages.image('doc_c', 1);
      const want = await markOn(clean, drawnWithIt);
      const got = await markOn(clean, overlaid);
      // the same text, in the same place, at the same size and angle: to a pixel or two
      expect(want.count).toBeGreaterThan(500);
      expect(Math.abs(got.count / want.count - 1)).toBeLessThan(0.15);
      expect(Math.abs(got.x - want.x)).toBeLessThan(3);
      expect(Math.abs(got.y - want.y)).toBeLessThan(3);
      expect(Math.abs(got.upperX - want.upperX)).toBeLessThan(3);
      for (const side of ['left', 'right', 'top', 'bottom'] as const)
        expect(Math.abs(got.box[side] - want.box[side])).toBeLessThan(4);
    },
  );

  it('keeps no more than its bound, letting the least recently used go first', async () => {
    const { renderer, asked } = counting();
    const size = (await inProcessRenderer.view(pdf, { page: 1 })).bytes.byteLength;
    // room for two pages
    const pages = images(renderer, [], Math.floor(size * 2.5));
    await pages.image('doc_d', 1);
    await pages.image('doc_d', 2);
    await pages.image('doc_d', 1);
    await pages.image('doc_d', 3);
    expect(pages.bytes).toBeLessThanOrEqual(size * 2.5);
    // page 2 was the least recently used: it went; page 1 stayed
    await pages.image('doc_d', 1);
    await pages.image('doc_d', 2);
    expect(asked).toEqual(['draw 1', 'draw 2', 'draw 3', 'draw 2']);
  });

  it("lets stamped images go before pages when it needs room, and a deleted document's at once", async () => {
    const { renderer, asked } = counting();
    const size = (await inProcessRenderer.view(pdf, { page: 1 })).bytes.byteLength;
    // room for about three images
    const pages = images(renderer, [], Math.floor(size * 3.5));
    await pages.image('doc_f', 1);
    await pages.image('doc_f', 1, stamp('ann@example.com'));
    await pages.image('doc_f', 2);
    await pages.image('doc_f', 3);
    // the stamped image went, though page 1 was used before it
    await pages.image('doc_f', 1);
    await pages.image('doc_f', 1, stamp('ann@example.com'));
    expect(asked).toEqual(['draw 1', 'stamp 1', 'draw 2', 'draw 3', 'stamp 1']);
    pages.forget('doc_f');
    expect(pages.bytes).toBe(0);
    await pages.image('doc_f', 1);
    expect(asked.at(-1)).toBe('draw 1');
  });

  it(`draws at most ${DRAWS_AT_ONCE} pages at once, reading each document only when its turn comes`, async () => {
    let holding = 0;
    let most = 0;
    const renderer: Renderer = {
      ...inProcessRenderer,
      view: async (bytes, options) => {
        try {
          return await inProcessRenderer.view(bytes, options);
        } finally {
          if (!options.drawn) holding--;
        }
      },
    };
    const pages = new PageImages(
      renderer,
      async () => {
        most = Math.max(most, ++holding);
        return pdf;
      },
      64 << 20,
    );
    await Promise.all(Array.from({ length: 12 }, (_, n) => pages.image(`doc_g${n}`, 1 + (n % 3))));
    expect(most).toBe(DRAWS_AT_ONCE);
    expect(holding).toBe(0);
  });

  it('answers a page past the last not_found, and keeps nothing for it', async () => {
    const { renderer, asked } = counting();
    const pages = images(renderer, []);
    await expect(pages.image('doc_e', 4)).rejects.toMatchObject({ code: 'not_found' });
    await expect(pages.image('doc_e', 4)).rejects.toMatchObject({ code: 'not_found' });
    expect(asked).toEqual(['draw 4', 'draw 4']);
    expect(pages.bytes).toBe(0);
  });
});

describe("a viewing session's page images", () => {
  it(`are served ${PAGE_IMAGES_PER_SESSION} at a time, in the order asked; another session is not held up`, async () => {
    const inTurn = perSession();
    let running = 0;
    let most = 0;
    const done: number[] = [];
    const releases: (() => void)[] = [];
    const ask = (session: string, n: number) =>
      inTurn(session, async () => {
        running++;
        most = Math.max(most, running);
        await new Promise<void>((resolve) => releases.push(resolve));
        running--;
        done.push(n);
      });
    const asks = Array.from({ length: 10 }, (_, n) => ask('one viewer', n));
    await new Promise((resolve) => setImmediate(resolve));
    expect(releases).toHaveLength(PAGE_IMAGES_PER_SESSION);
    // another viewer gets in at once
    const other = ask('another viewer', 99);
    await new Promise((resolve) => setImmediate(resolve));
    expect(releases).toHaveLength(PAGE_IMAGES_PER_SESSION + 1);
    releases.pop()!();
    await other;
    while (done.length < 11) {
      releases.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(asks);
    expect(most).toBe(PAGE_IMAGES_PER_SESSION + 1);
    expect(done.filter((n) => n !== 99)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
