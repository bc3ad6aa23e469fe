/**
 * Templates cached by one process are never served after another process deleted them (issue 44,
 * case 6): two services on one PostgreSQL database, as two processes or machines run. And what a
 * process keeps compiled is bounded by the bytes of the templates' files, however many there are.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { FakeClock } from '../../src/clock';
import { openDatabase } from '../../src/db';
import { createService, type Service } from '../../src/service';
import { inProcessRenderer, type Renderer } from '../../src/templates/pool';
import { TemplateStore } from '../../src/templates/store';
import { root } from '../support/fixtures';
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

describe('compiled templates a process keeps', () => {
  it('are bounded by the bytes of their files, the least recently used let go first', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-kept-'));
    const database = await openDatabase({ sqlitePath: path.join(dir, 'paperlink.db') });
    try {
      const font = fs.readFileSync(path.join(root, 'examples/gallery/fonts/PlayfairDisplay-SemiBold.ttf'));
      let loads = 0;
      const counting: Renderer = {
        ...inProcessRenderer,
        load: (source, options) => {
          loads++;
          return inProcessRenderer.load(source, options);
        },
      };
      // room for two templates that each carry the font (~194 KB)
      const store = new TemplateStore(database.db, new FakeClock(), counting, 2.5 * font.length);
      const ids: string[] = [];
      for (const n of [1, 2, 3, 4]) {
        const made = await store.create({
          source: `<document><fonts><font family="F" src="f.ttf"/></fonts><body><p font="F">Card ${n} {{name}}</p></body></document>`,
          assets: async (p) => (p === 'f.ttf' ? new Uint8Array(font) : undefined),
        });
        ids.push(made.id);
      }
      expect(store.keptCompiled.versions).toBe(2);
      expect(store.keptCompiled.bytes).toBeLessThanOrEqual(2.5 * font.length);
      const compiled = loads;
      await store.load(ids[3]);
      await store.load(ids[2]);
      expect(loads).toBe(compiled); // the two most recent are kept
      await store.load(ids[0]); // compiled again, and the least recently used (4) goes
      expect(loads).toBe(compiled + 1);
      await store.load(ids[2]);
      expect(loads).toBe(compiled + 1);
      await store.load(ids[3]);
      expect(loads).toBe(compiled + 2);
      expect(store.keptCompiled).toEqual({ versions: 2, bytes: expect.any(Number) as number });
      expect(store.keptCompiled.bytes).toBeLessThanOrEqual(2.5 * font.length);
      // a deleted template's versions are let go with it
      await store.remove(ids[3]);
      expect(store.keptCompiled.versions).toBe(1);
    } finally {
      await database.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
