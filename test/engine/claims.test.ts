/**
 * Who may take over what, with several processes on one PostgreSQL database: a process's presence
 * is an advisory lock PostgreSQL drops when the process's connection goes (as when it dies), and a
 * sweep frees and hands over only what processes that are gone had claimed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config';
import { postgresPresence, type Presence } from '../../src/db/presence';
import { Claims } from '../../src/engine/claims';
import { createService, type Service } from '../../src/service';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { freshPostgres } from '../support/service';

describe('claims and presence on PostgreSQL', () => {
  let service: Service;
  let dataDir: string;
  let databaseUrl: string;
  const presences: Presence[] = [];
  const presence = async () => {
    const p = await postgresPresence(
      databaseUrl,
      async (channel, payload) =>
        void (await sql`select pg_notify(${channel}, ${payload})`.execute(service.database.db)),
    );
    presences.push(p);
    return p;
  };

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-claims-'));
    databaseUrl = await freshPostgres();
    service = await createService(loadConfig({}, { dataDir, databaseUrl, logLevel: 'silent' }), {
      log: () => undefined,
    });
    await service.apps.magicLink.put({});
  });
  afterAll(async () => {
    for (const p of presences) await p.close().catch(() => undefined);
    await service.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const link = async (to: string) => {
    const variables = (await service.templates.load(EXAMPLE_IDS.letter)).variables;
    const made = await service.documents.generate(
      {
        template_id: EXAMPLE_IDS.letter,
        merge_parameters: Object.fromEntries(variables.map((v) => [v, 'x'])),
        destinations: { magic_link: { recipient_email: to, expire_after_n_views: 2 } },
      },
      { keyId: null, name: 'test' },
    );
    return made.magic_link_piece_id!;
  };

  it('sees every live process, hands over only what a gone one claimed, and tells whose e-mail it was sending', async () => {
    const a = await presence();
    const b = await presence();
    expect((await a.live()).sort()).toEqual([a.id, b.id].sort());
    const claimsA = new Claims(service.database.db, a);
    const claimsB = new Claims(service.database.db, b);
    const mine = await link('mine@example.com');
    const theirs = await link('theirs@example.com');
    expect(await claimsA.link(mine)).toBe(true);
    expect(await claimsB.link(theirs)).toBe(true);
    // B holds it: A may not take it, and a sweep leaves it with B
    expect(await claimsA.link(theirs)).toBe(false);
    await service.database.db
      .updateTable('magic_links')
      .set({ sending_by: b.id, sending_until: new Date(Date.now() + 60_000).toISOString() })
      .where('id', '=', theirs)
      .execute();
    let swept = await claimsA.sweep();
    expect(swept.links).toContain(mine); // its own, to start again if its flow is not running
    expect(swept.links).not.toContain(theirs);
    expect(swept.unleased).toEqual([]);

    // B's connection goes, as when its process dies
    await b.close();
    expect(await a.live()).toEqual([a.id]);
    swept = await claimsA.sweep();
    expect(swept.links).toContain(theirs);
    expect(swept.unleased).toEqual([theirs]);
    const row = await service.database.db
      .selectFrom('magic_links')
      .select(['claimed_by', 'sending_by', 'sending_until'])
      .where('id', '=', theirs)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ claimed_by: null, sending_by: null, sending_until: null });
    expect(await claimsA.link(theirs)).toBe(true);
  });

  it('tells every process that a link changed', async () => {
    const a = await presence();
    const b = await presence();
    const heard: string[] = [];
    a.onLinkChanged = (id, change) => heard.push(`a ${id} ${change}`);
    b.onLinkChanged = (id, change) => heard.push(`b ${id} ${change}`);
    await a.linkChanged('ml_1', 'viewed');
    const deadline = Date.now() + 10_000;
    while (heard.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(heard.sort()).toEqual(['a ml_1 viewed', 'b ml_1 viewed']);
  });
});
