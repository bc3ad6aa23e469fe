/**
 * Bounded work: every render limit refuses a hostile template or value with 422
 * render_limit_exceeded naming the limit, what was found and the variable that raises it — before
 * the work is done (an image's pixels at upload) or as it runs (pages, list items, text) — in this
 * process and on the render threads alike.
 */
import zlib from 'node:zlib';
import { loadTemplate, renderTemplate } from '../../src/templates';
import { DEFAULT_LIMITS } from '../../src/config';
import { setRenderLimits } from '../../src/templates/limits';
import { RenderPool } from '../../src/templates/pool';
import { testService } from '../support/service';

/** A PNG whose header says `width` × `height` (one tiny IDAT: it is never decoded). */
function pngOf(width: number, height: number): Uint8Array {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(Buffer.concat([Buffer.from(type), data])));
    return Buffer.concat([len, Buffer.from(type), data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return new Uint8Array(
    Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      chunk('IHDR', ihdr),
      chunk('IDAT', zlib.deflateSync(Buffer.alloc(1))),
      chunk('IEND', Buffer.alloc(0)),
    ]),
  );
}

const refused = (field: string) => ({
  code: 'render_limit_exceeded',
  details: [expect.objectContaining({ field, code: 'render_limit_exceeded' })],
});

afterEach(() => setRenderLimits(DEFAULT_LIMITS));

describe('render limits', () => {
  it('refuses an image of 20000 × 20000 pixels at upload, naming it, before decoding it', async () => {
    const t = await testService();
    try {
      const form = new FormData();
      form.append(
        'file',
        new Blob(['<document><body><image src="huge.png" width="1in"/></body></document>'], {
          type: 'application/xml',
        }),
        'bomb.xml',
      );
      form.append('huge.png', new Blob([Uint8Array.from(pngOf(20_000, 20_000))], { type: 'image/png' }), 'huge.png');
      const req = new Request('http://x/v1/templates', { method: 'POST', body: form });
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/templates',
        headers: { 'content-type': req.headers.get('content-type')!, 'x-service-api-token': t.key },
        payload: Buffer.from(await req.arrayBuffer()),
      });
      expect(res.statusCode).toBe(422);
      expect(res.json().error).toMatchObject(refused('image_pixels'));
      expect(res.json().error.message).toContain('huge.png');
      expect(res.json().error.message).toContain('20000 × 20000');
      expect(res.json().error.message).toContain('RENDER_MAX_IMAGE_PIXELS');
    } finally {
      await t.stop();
    }
  });

  it('refuses a document of more pages than allowed', async () => {
    setRenderLimits({ pages: 5 });
    const t = await loadTemplate(
      '<document><body><each var="items" as="it"><p>{{it.n}}</p><page-break/></each></body></document>',
    );
    await expect(
      renderTemplate(t, { items: JSON.stringify(Array.from({ length: 20 }, (_, n) => ({ n: String(n) }))) }),
    ).rejects.toMatchObject(refused('pages'));
    await expect(renderTemplate(t, { items: JSON.stringify([{ n: '1' }, { n: '2' }]) })).resolves.toBeInstanceOf(
      Uint8Array,
    );
  });

  it('counts list items over the whole document: nested lists multiply', async () => {
    setRenderLimits({ items: 1_000 });
    const t = await loadTemplate(
      '<document><body><each var="rows" as="r"><each var="rows" as="c"><p>{{c.n}}</p></each></each></body></document>',
    );
    const rows = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ n: String(i) })));
    await expect(renderTemplate(t, { rows: rows(40) })).rejects.toMatchObject(refused('list_items'));
    await expect(renderTemplate(t, { rows: rows(20) })).resolves.toBeInstanceOf(Uint8Array);
  });

  it('refuses merge values longer than allowed in all', async () => {
    setRenderLimits({ text: 1_000 });
    const t = await loadTemplate('<document><body><p>{{a}}</p><p>{{b}}</p></body></document>');
    await expect(renderTemplate(t, { a: 'x'.repeat(600), b: 'y'.repeat(600) })).rejects.toMatchObject(
      refused('text_length'),
    );
  });

  it('applies the limits on the render threads', async () => {
    const pool = new RenderPool(1, 30_000, 256, { ...DEFAULT_LIMITS, pages: 3 });
    try {
      const t = await loadTemplate(
        '<document><body><each var="items" as="it"><p>{{it.n}}</p><page-break/></each></body></document>',
      );
      await expect(
        pool.render(t, { items: JSON.stringify(Array.from({ length: 10 }, (_, n) => ({ n: String(n) }))) }),
      ).rejects.toMatchObject(refused('pages'));
    } finally {
      await pool.close();
    }
  });
});
