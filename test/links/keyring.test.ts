/**
 * The keys of Magic Link URLs live outside the database (issue 44, case 8): whoever reads a backup
 * of the database finds only token hashes. An older version's key moves out on start with its
 * links' URLs intact, and a rotation leaves every live link's URL as it is.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { loadConfig, type Config } from '../../src/config';
import { linkKeyring } from '../../src/links/keyring';
import { createService } from '../../src/service';
import { derivedToken, sha256 } from '../../src/secrets';
import { cli } from '../support/cli';
import { BACKENDS, testService, type TestService } from '../support/service';
import { tempDir } from '../support/tmp';

const sample = JSON.parse(
  fs.readFileSync(path.join(__dirname, '../../examples/postcard/sample.json'), 'utf8'),
) as Record<string, string>;

describe.each(BACKENDS)('Magic Link keys on %s', (backend) => {
  let t: TestService;
  beforeAll(async () => {
    t = await testService({ backend });
    await t.service.apps.magicLink.put({});
  });
  afterAll(() => t?.stop());

  const share = async (to: string) => {
    const made = await t.service.documents.generate(
      {
        template_id: EXAMPLE_IDS.postcard,
        merge_parameters: sample,
        destinations: { magic_link: { recipient_email: to, expire_after_n_views: 3 } },
      },
      { keyId: null, name: 'test' },
    );
    const id = made.magic_link_piece_id!;
    return { id, token: new URL(made.destinations.magic_link!.url).pathname.split('/').pop()! };
  };
  const opens = async (token: string) => (await t.service.links.open(token, {})) !== undefined;
  const file = () => path.join(t.config.dataDir, 'secrets', 'link-token-keys');

  it('keeps the key in a file of its own, readable by its owner only, and none in the database', async () => {
    const { id, token } = await share('a@example.com');
    expect(await opens(token)).toBe(true);
    expect(fs.statSync(file()).mode & 0o777).toBe(0o600);
    const settings = await t.service.database.db.selectFrom('settings').select('key').execute();
    expect(settings.map((s) => s.key)).not.toContain('link_token_key');
    const row = await t.service.database.db
      .selectFrom('magic_links')
      .select(['token_hash', 'token_key'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ token_hash: sha256(token), token_key: 'k1' });
  });

  it("moves an older version's key out of the database on start, and its links keep their URLs", async () => {
    const { id } = await share('b@example.com');
    // as an older version left it: its key in the settings table, the link made with that key
    const old = randomBytes(32);
    const oldToken = derivedToken(old, `${id}.0`);
    const db = t.service.database.db;
    await db
      .insertInto('settings')
      .values({ key: 'link_token_key', value: old.toString('base64') })
      .execute();
    await db
      .updateTable('magic_links')
      .set({ token_key: null, token_hash: sha256(oldToken) })
      .where('id', '=', id)
      .execute();
    t = await t.restart();
    expect(await t.service.database.db.selectFrom('settings').select('key').execute()).not.toContainEqual({
      key: 'link_token_key',
    });
    expect(fs.readFileSync(file(), 'utf8')).toContain(`legacy ${old.toString('base64')}`);
    expect(await opens(oldToken)).toBe(true);
    // a retried send e-mails (and answers) the URL the link had
    expect((await t.service.links.deliver(id, false)).url).toContain(`/l/${oldToken}`);
  });

  // several processes share one database only on PostgreSQL (one SQLite data dir serves one server)
  if (backend === 'postgres')
    it("refuses to start a process whose keys differ from the other processes' on the database, and starts one given the same", async () => {
      const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-keys-'));
      const start = (overrides: Partial<Config>) =>
        createService(
          loadConfig({}, { dataDir: elsewhere, databaseUrl: t.config.databaseUrl, logLevel: 'silent', ...overrides }),
          { examples: false },
        );
      try {
        // another machine that made its own key file
        await expect(start({})).rejects.toMatchObject({ code: 'invalid_configuration' });
        // given the first machine's keys
        const keys = fs
          .readFileSync(file(), 'utf8')
          .split('\n')
          .filter((l) => l && !l.startsWith('#'))
          .map((l) => l.replace(' ', ':'))
          .join(',');
        const second = await start({ linkTokenKeys: keys });
        await second.close();
      } finally {
        fs.rmSync(elsewhere, { recursive: true, force: true });
      }
    });

  it('rotates: new links use the new key, and every live link keeps its URL', async () => {
    const before = await share('c@example.com');
    const rotated = linkKeyring(t.config).rotate();
    expect(rotated.id).toBe('k2');
    const after = await share('d@example.com');
    expect(
      await t.service.database.db.selectFrom('magic_links').select('token_key').where('id', '=', after.id).execute(),
    ).toEqual([{ token_key: 'k2' }]);
    expect(await opens(before.token)).toBe(true);
    expect(await opens(after.token)).toBe(true);
    expect((await t.service.links.deliver(before.id, false)).url).toContain(`/l/${before.token}`);
  });
});

describe('paperlink secrets rotate', () => {
  const dataDir = tempDir();
  const elsewhere = tempDir();
  const ids = () =>
    fs
      .readFileSync(path.join(dataDir, 'secrets', 'link-token-keys'), 'utf8')
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => l.split(' ')[0]);

  it('adds a current key to the file, keeping the ones live links need', async () => {
    expect((await cli(['secrets', 'rotate', '--data-dir', dataDir])).code).toBe(0);
    expect(ids()).toEqual(['k1', 'k2']);
    expect((await cli(['secrets', 'rotate', '--data-dir', dataDir])).code).toBe(0);
    expect(ids()).toEqual(['k1', 'k2', 'k3']);
  });

  it('with LINK_TOKEN_KEYS, prints the entry to append there and writes nothing', async () => {
    process.env.LINK_TOKEN_KEYS = `k1:${randomBytes(32).toString('base64')}`;
    try {
      const out = await cli(['secrets', 'rotate', '--data-dir', elsewhere]);
      expect(out.code).toBe(0);
      const [id, key] = out.stdout.trim().split(':');
      expect(id).toBe('k2');
      expect(Buffer.from(key, 'base64')).toHaveLength(32);
      expect(fs.existsSync(path.join(elsewhere, 'secrets'))).toBe(false);
    } finally {
      delete process.env.LINK_TOKEN_KEYS;
    }
  });
});
