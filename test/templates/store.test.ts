/**
 * Templates cached by one process are never served after another process deleted them (issue 44,
 * case 6): two services on one PostgreSQL database, as two processes or machines run.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { createService, type Service } from '../../src/service';
import { freshPostgres } from '../support/service';

describe('templates shared by two processes on PostgreSQL', () => {
  const services: Service[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    for (const s of services) await s.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('a template deleted by one is refused by the other at its next use, though it had it compiled', async () => {
    const databaseUrl = await freshPostgres();
    // two machines: each has its own data dir, so both are given the Magic Link keys
    const linkTokenKeys = `k1:${randomBytes(32).toString('base64')}`;
    const start = async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-store-'));
      dirs.push(dataDir);
      const s = await createService(loadConfig({}, { dataDir, databaseUrl, linkTokenKeys, logLevel: 'silent' }), {
        examples: false,
      });
      services.push(s);
      return s;
    };
    const a = await start();
    const b = await start();
    const made = await a.templates.create({ source: '<document><body><p>Hello {{name}}</p></body></document>' });
    const compiled = await a.templates.load(made.id);
    const caller = { keyId: null, name: 'test' };
    const generate = (s: Service) =>
      s.documents.generate(
        { template_id: made.id, merge_parameters: { name: 'Ada' }, destinations: { inkit_storage: {} } },
        caller,
      );
    expect((await generate(a)).status).toBe('completed');
    expect(compiled.variables).toEqual(['name']);
    await b.templates.remove(made.id);
    await expect(a.templates.load(made.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(generate(a)).rejects.toMatchObject({
      code: 'validation_failed',
      details: [expect.objectContaining({ field: 'template_id', code: 'not_found' })],
    });
  });
});
