import crypto from 'node:crypto';
import { FakeClock } from '../../src/clock';
import { BACKENDS, testService, type TestService } from '../support/service';

describe.each(BACKENDS)('API keys on %s', (backend) => {
  let t: TestService;
  const clock = new FakeClock('2026-11-22T09:00:00Z');
  beforeAll(async () => {
    t = await testService({ backend, clock });
  });
  afterAll(() => t?.stop());

  it('stores only the SHA-256 of a key, never the key', async () => {
    const { secret, key } = await t.service.keys.create('api', 'billing');
    const row = await t.service.database.db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', key.id)
      .executeTakeFirstOrThrow();
    expect(row.hash).toBe(crypto.createHash('sha256').update(secret).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(secret.slice(12));
    expect(key.prefix).toBe(secret.slice(0, 12));
  });

  it('authenticates with a constant-time comparison of hashes', async () => {
    const { secret } = await t.service.keys.create('api', 'ct');
    const spy = jest.spyOn(crypto, 'timingSafeEqual');
    try {
      expect(await t.service.keys.authenticate('api', secret)).toMatchObject({ name: 'ct' });
      expect(spy).toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  it('refuses a key of the wrong kind, a changed key and a revoked key', async () => {
    const { secret, key } = await t.service.keys.create('api', 'to revoke');
    expect(await t.service.keys.authenticate('postcard', secret)).toBeUndefined();
    expect(
      await t.service.keys.authenticate('api', secret.slice(0, -1) + (secret.endsWith('a') ? 'b' : 'a')),
    ).toBeUndefined();
    await t.service.keys.revoke(key.prefix);
    expect(await t.service.keys.authenticate('api', secret)).toBeUndefined();
    const res = await t.app.inject({ method: 'GET', url: '/v1/documents', headers: { 'x-service-api-token': secret } });
    expect(res.statusCode).toBe(401);
  });

  it('records when a key was last used', async () => {
    const { secret, key } = await t.service.keys.create('api', 'usage');
    expect(key.last_used_at).toBeNull();
    await t.app.inject({ method: 'GET', url: '/v1/templates', headers: { 'x-service-api-token': secret } });
    const listed = (await t.service.keys.list('api')).find((k) => k.id === key.id);
    expect(listed?.last_used_at).toBe('2026-11-22T09:00:00.000Z');
  });

  it('refuses a key without a name', async () => {
    await expect(t.service.keys.create('api', '  ')).rejects.toMatchObject({ code: 'validation_failed' });
  });
});
