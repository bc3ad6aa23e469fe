/**
 * Hostile input, round three (issue 64): numbers bounded before any arithmetic, settings read back
 * as strictly as they are written, base64 validated by decoding it, and no character that hides
 * or reorders others in an address or a name. Each case was a 500 or a lie before.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import zlib from 'node:zlib';
import { PDFDocument, PDFName } from 'pdf-lib';
import { inProcessRenderer } from '../../src/templates/pool';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { root } from '../support/fixtures';
import { testService, type TestService } from '../support/service';
import fs from 'node:fs';
import path from 'node:path';

const letter = JSON.parse(fs.readFileSync(path.join(root, 'examples/letter/sample.json'), 'utf8')) as Record<
  string,
  string
>;

describe('hostile input, round three', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await testService();
    await t.service.apps.magicLink.put({});
  });
  afterAll(() => t.stop());

  const api = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown) =>
    t.app.inject({
      method,
      url,
      headers: {
        'x-service-api-token': t.key,
        ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
      },
      payload: payload === undefined ? undefined : JSON.stringify(payload),
    });
  const generate = (extra: Record<string, unknown>, destinations: Record<string, unknown> = { inkit_storage: {} }) =>
    api('POST', '/v1/generate', { template_id: EXAMPLE_IDS.letter, merge_parameters: letter, destinations, ...extra });
  /** The fields and codes of a 422. */
  const refused = (res: { statusCode: number; json(): unknown }) => {
    expect(res.statusCode).toBe(422);
    return (res.json() as { error: { details: { field: string; code: string }[] } }).error.details.map(
      (d) => `${d.field} ${d.code}`,
    );
  };

  describe('a duration of 1e308 days', () => {
    it('is refused as out of range wherever a duration is taken', async () => {
      expect(refused(await api('PUT', '/v1/apps/inkit_storage', { retain_for: { days: 1e308 } }))).toEqual([
        'retain_for.days range',
      ]);
      expect(refused(await generate({ retain_for: { days: 1e308 } }))).toContain('retain_for.days range');
      for (const key of ['retain_from_created', 'retain_from_opened'])
        expect(
          refused(await generate({}, { magic_link: { recipient_email: 'pat@example.com', [key]: { hours: 1e308 } } })),
        ).toContain(`destinations.magic_link.${key}.hours range`);
      // the longest allowed is still taken
      expect((await api('PUT', '/v1/apps/inkit_storage', { retain_for: { days: 3650 } })).statusCode).toBe(200);
      expect(refused(await api('PUT', '/v1/apps/inkit_storage', { retain_for: { days: 3651 } }))).toEqual([
        'retain_for.days range',
      ]);
      await api('PUT', '/v1/apps/inkit_storage', { retain_for: null });
    });

    it('stored before by some other way, makes no generate fail: read back, it is no retention', async () => {
      const value = JSON.stringify({ retain_for: { days: 1e308 }, configured_at: '2026-01-01T00:00:00.000Z' });
      await sql`insert into settings (key, value) values ('app:inkit_storage', ${value}) on conflict (key) do update set value = ${value}`.execute(
        t.service.database.db,
      );
      const made = await generate({});
      expect(made.statusCode).toBe(201);
      expect(made.json().destinations.inkit_storage.expires_at).toBeNull();
      expect((await api('GET', '/v1/apps/inkit_storage')).json()).toMatchObject({ retain_for: null });
    });
  });

  describe('base64', () => {
    it('takes an attachment and an appended PDF of about 4 MB in base64 (a pattern over them overflowed the stack)', async () => {
      const doc = await PDFDocument.create();
      doc.addPage([200, 200]);
      // a PDF of about 2.8 MB (3.7 MB in base64): a file of random bytes attached to it does not deflate
      await doc.attach(randomBytes(2_800_000), 'filler.bin', { mimeType: 'application/octet-stream' });
      const pdf = Buffer.from(await doc.save());
      expect(pdf.toString('base64').length).toBeGreaterThan(3_600_000);
      const big = Buffer.alloc(3_000_000, 66).toString('base64');
      const res = await generate({
        attachments: [{ name: 'data.bin', content: big }],
        append: [{ pdf: pdf.toString('base64') }],
      });
      expect(res.statusCode).toBe(201);
    });

    it('refuses what is not base64, without decoding it leniently', async () => {
      for (const content of ['not base64!', 'YQ', 'YQ=', 'Y-_Q', `${'A'.repeat(4000)}*`])
        expect(refused(await generate({ attachments: [{ name: 'a.txt', content }] }))).toEqual([
          'attachments[0].content invalid',
        ]);
    });
  });

  describe('PDFs from outside', () => {
    it('refuses an appended PDF whose page unpacks to hundreds of megabytes, before anything draws it', async () => {
      const doc = await PDFDocument.create();
      const page = doc.addPage([300, 300]);
      // 256 MB of drawing instructions (as well a gigabyte: the check stops at 32 MB), deflated to 250 KB
      const content = zlib.deflateSync(Buffer.alloc(256 * 1024 * 1024, ' '), { level: 9 });
      const stream = doc.context.stream(content, { Filter: 'FlateDecode' });
      page.node.set(PDFName.of('Contents'), doc.context.register(stream));
      const bomb = Buffer.from(await doc.save());
      expect(bomb.length).toBeLessThan(2 * 1024 * 1024);
      const res = await generate({ append: [{ pdf: bomb.toString('base64') }] });
      expect(res.statusCode).toBe(422);
      expect(res.json().error).toMatchObject({
        code: 'render_limit_exceeded',
        details: [{ field: 'page_content_bytes' }],
      });
    });

    it('draws an image of a page 3 by 14,400 points, smaller than a canvas must be', async () => {
      const doc = await PDFDocument.create();
      doc.addPage([3, 14_400]).drawRectangle({ x: 0, y: 0, width: 3, height: 14_400 });
      const { bytes } = await inProcessRenderer.view(await doc.save(), { page: 1 });
      expect(Buffer.from(bytes.subarray(1, 4)).toString()).toBe('PNG');
      // width and height from the PNG's header
      const png = Buffer.from(bytes);
      expect(png.readUInt32BE(20)).toBeLessThanOrEqual(8192);
      expect(png.readUInt32BE(16) * png.readUInt32BE(20)).toBeLessThanOrEqual(4_000_000);
    });
  });

  describe('characters that hide or reorder others', () => {
    const RLO = '\u202E';

    it('are refused in e-mail addresses and viewer lists, naming the field', async () => {
      expect(
        refused(
          await generate({}, { magic_link: { recipient_email: `${RLO}pat@example.com`, expire_after_n_views: 1 } }),
        ),
      ).toContain('destinations.magic_link.recipient_email invalid_email');
      expect(
        refused(
          await generate(
            {},
            {
              magic_link: {
                recipient_email: 'pat@example.com',
                expire_after_n_views: 1,
                allowed_viewers: [`${RLO}evil@example.org`, 'ann@example.com'],
              },
            },
          ),
        ),
      ).toEqual(['destinations.magic_link.allowed_viewers[0] invalid_email']);
    });

    it('are refused in file names: an attachment, a document, a template', async () => {
      expect(refused(await generate({ attachments: [{ name: `invoice${RLO}fdp.exe`, content: 'YWJj' }] }))).toEqual([
        'attachments[0].name invalid_character',
      ]);
      expect(refused(await generate({}, { inkit_storage: { name: `report${RLO}fdp.exe` } }))).toEqual([
        'destinations.inkit_storage.name invalid_character',
      ]);
      const upload = await t.app.inject({
        method: 'POST',
        url: `/v1/templates?name=${encodeURIComponent(`letter${RLO}`)}`,
        headers: { 'x-service-api-token': t.key, 'content-type': 'application/xml' },
        payload: '<document><body><p>{{name}}</p></body></document>',
      });
      expect(refused(upload)).toEqual(['name invalid_character']);
    });
  });
});
