/**
 * Render once, store until stored (src/documents/spool.ts): while the S3 bucket is away (a real
 * s3proxy answering NoSuchBucket), a render's retries store the bytes of its first render instead
 * of rendering again — a generate retried with its render id (as Temporal retries the activity),
 * and a postcard's render; once the bucket is back, the retry stores those bytes and nothing waits.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { FakeClock } from '../../src/clock';
import { SPOOL_KEEP_MS } from '../../src/documents/spool';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { sample } from '../support/rows';
import { freshBucket, S3_MISSING } from '../support/s3';
import { BACKENDS, testService, type TestService } from '../support/service';

const caller = { keyId: null, name: 'test' };
const letter = JSON.parse(fs.readFileSync(path.join(__dirname, '../../examples/letter/sample.json'), 'utf8')) as Record<
  string,
  unknown
>;

describe.each(BACKENDS)('a render whose bytes cannot be stored, on %s', (backend) => {
  const test = S3_MISSING ? it.skip : it;
  const clock = new FakeClock('2026-11-27T10:00:00Z');
  let t: TestService;
  let bucket: string;
  let renders = 0;
  beforeAll(async () => {
    if (S3_MISSING) return;
    const s3 = await freshBucket();
    bucket = s3.bucket;
    // no background work: the test runs each render itself
    t = await testService({ backend, clock, config: { storage: 's3', s3 }, service: { runFlows: false } });
    const renderer = t.service.renderer;
    const render = renderer.render.bind(renderer);
    renderer.render = (...args) => {
      renders++;
      return render(...args);
    };
  });
  afterAll(() => t?.stop());

  /** The bucket the service writes to goes away (a name the server has no bucket of), or comes back. */
  let gone = 0;
  const bucketAway = () => (t.config.s3!.bucket = `${bucket}-gone-${++gone}`);
  const bucketBack = async () => {
    const name = t.config.s3!.bucket;
    const client = new S3Client({ region: 'us-east-1', endpoint: process.env.PAPERLINK_TEST_S3, forcePathStyle: true });
    try {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    } finally {
      client.destroy();
    }
  };
  const waiting = async () =>
    (await t.service.database.db.selectFrom('render_spool').select('render_id').execute()).map((r) => r.render_id);

  test('a generate retried with its render id renders once and stores those bytes once the storage is back', async () => {
    const body = {
      template_id: EXAMPLE_IDS.letter,
      merge_parameters: { ...letter, unknown_one: 'x' },
      destinations: { inkit_storage: {} },
    };
    bucketAway();
    const before = renders;
    for (let i = 0; i < 3; i++)
      await expect(t.service.documents.generate(body, caller, 'rnd_spooled')).rejects.toMatchObject({
        name: 'NoSuchBucket',
      });
    expect(renders - before).toBe(1);
    expect(await waiting()).toEqual(['rnd_spooled']);
    await bucketBack();
    const result = await t.service.documents.generate(body, caller, 'rnd_spooled');
    expect(renders - before).toBe(1);
    expect(await waiting()).toEqual([]);
    // what the render said is kept with its bytes
    expect(result.warnings.map((w) => w.code)).toContain('unused_parameter');
    const { bytes } = await t.service.documents.pdf(result.document_id);
    expect(Buffer.from(bytes).subarray(0, 5).toString()).toBe('%PDF-');
    expect(result.destinations.inkit_storage).toMatchObject({ size: bytes.length });
  });

  test('the API answers 503 storage_unavailable meanwhile, and the same request with its Idempotency-Key then stores the first render', async () => {
    const request = () =>
      t.app.inject({
        method: 'POST',
        url: '/v1/generate',
        headers: { 'x-service-api-token': t.key, 'idempotency-key': 'storage-away-1' },
        payload: { template_id: EXAMPLE_IDS.letter, merge_parameters: letter, destinations: { inkit_storage: {} } },
      });
    bucketAway();
    const before = renders;
    for (let i = 0; i < 2; i++) {
      const away = await request();
      expect([away.statusCode, away.json().error.code, away.headers['retry-after']]).toEqual([
        503,
        'storage_unavailable',
        '5',
      ]);
    }
    await bucketBack();
    const stored = await request();
    expect(stored.statusCode).toBe(201);
    expect(renders - before).toBe(1);
    expect(await waiting()).toEqual([]);
  });

  test("a postcard's render is tried again without rendering again", async () => {
    const token = (await t.service.keys.create('postcard', 'spool test')).secret;
    const received = await t.service.postcards.accept({
      ...sample,
      api_token: token,
      template_id: EXAMPLE_IDS.postcard,
    });
    bucketAway();
    const before = renders;
    await expect(t.service.postcards.render(received.id)).rejects.toBeDefined();
    await expect(t.service.postcards.render(received.id)).rejects.toBeDefined();
    expect(renders - before).toBe(1);
    await bucketBack();
    expect(await t.service.postcards.render(received.id)).toBe('rendered');
    expect(renders - before).toBe(1);
    expect(await waiting()).toEqual([]);
  });

  test('housekeeping deletes bytes whose retry never came, after a day', async () => {
    bucketAway();
    await expect(
      t.service.documents.generate(
        { template_id: EXAMPLE_IDS.letter, merge_parameters: letter, destinations: { inkit_storage: {} } },
        caller,
        'rnd_abandoned',
      ),
    ).rejects.toBeDefined();
    expect(await waiting()).toEqual(['rnd_abandoned']);
    expect(await t.service.housekeeping()).toMatchObject({ spooled: 0 });
    clock.advance(SPOOL_KEEP_MS + 1000);
    expect(await t.service.housekeeping()).toMatchObject({ spooled: 1 });
    expect(await waiting()).toEqual([]);
    await bucketBack();
    // bytes kept by one run of a render that another run stored meanwhile go at once
    expect(await t.service.documents.spool.keep('rnd_raced', new TextEncoder().encode('%PDF-1.7 a'), null)).toBe(true);
    await t.service.documents.store({
      renderId: 'rnd_raced',
      templateId: EXAMPLE_IDS.postcard,
      templateVersion: 1,
      name: 'raced',
      description: null,
      pdf: new TextEncoder().encode('%PDF-1.7 b'),
      caller,
    });
    expect(await t.service.housekeeping()).toMatchObject({ spooled: 1 });
    expect(await waiting()).toEqual([]);
  });
});
