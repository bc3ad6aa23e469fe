/**
 * Fencing (issue 44, case 2): a process whose PostgreSQL presence connection is cut is seen as dead
 * by the others, which may take its work; so it stops claiming before anything else happens, comes
 * back with a new presence, and runs only what nobody else took meanwhile.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config';
import { postgresPresence, type Presence } from '../../src/db/presence';
import { Claims } from '../../src/engine/claims';
import type { EmbeddedEngine } from '../../src/engine/embedded';
import { createService, type Service } from '../../src/service';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { freshPostgres } from '../support/service';

describe('a process that loses its presence on PostgreSQL', () => {
  let service: Service;
  let dataDir: string;
  let other: Presence;
  /** What the test does while the service has stopped and before it reconnects; then what it saw. */
  let whileLost: (id: number) => Promise<void> = async () => undefined;
  let back: (id: number) => void = () => undefined;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-fencing-'));
    const databaseUrl = await freshPostgres();
    service = await createService(loadConfig({}, { dataDir, databaseUrl, logLevel: 'silent' }), {
      runFlows: true,
      examples: true,
      log: () => undefined,
      onPresence: async (state, id) => (state === 'lost' ? whileLost(id) : back(id)),
    });
    await service.apps.magicLink.put({});
    // another process on the database
    other = await postgresPresence(databaseUrl);
  });
  afterAll(async () => {
    await other?.close();
    await service?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const db = () => service.database.db;
  const engine = () => service.engine as EmbeddedEngine;
  const link = async (to: string) => {
    const variables = (await service.templates.load(EXAMPLE_IDS.letter)).variables;
    // as the API does: the engine's generate flow starts the link's lifecycle before it answers
    const made = await service.engine.generate({
      body: {
        template_id: EXAMPLE_IDS.letter,
        merge_parameters: Object.fromEntries(variables.map((v) => [v, 'x'])),
        destinations: { magic_link: { recipient_email: to, expire_after_n_views: 2 } },
      },
      caller: { keyId: null, name: 'test' },
    });
    return made.magic_link_piece_id!;
  };
  const row = async (id: string) =>
    db().selectFrom('magic_links').select(['claimed_by', 'wake_at']).where('id', '=', id).executeTakeFirstOrThrow();
  /** Cuts the service's presence connection as a network fault or a PostgreSQL restart would. */
  const cut = async (): Promise<{ lostId: number; runningWhenLost: number; backId: number }> => {
    const mine = service.links.owner;
    let runningWhenLost = -1;
    let lostId = 0;
    const seen = new Promise<number>((resolve) => (back = resolve));
    const ask = whileLost;
    whileLost = async (id) => {
      lostId = id;
      runningWhenLost = engine().size;
      await ask(id);
    };
    const { rows } = await sql<{ ok: boolean }>`
      SELECT pg_terminate_backend(pid) AS ok FROM pg_locks
      WHERE locktype = 'advisory' AND classid = ${0x706c} AND objid = ${mine} AND granted`.execute(db());
    expect(rows).toEqual([{ ok: true }]);
    const backId = await seen;
    whileLost = ask;
    return { lostId, runningWhenLost, backId };
  };

  it('stops claiming at once, comes back with a new presence id, and runs what is due again', async () => {
    const before = service.links.owner;
    const id = await link('mine@example.com');
    await engine().drain();
    let dueWhileLost = '';
    whileLost = async () => {
      // a change while this process is cut off: it is not this process's to run now
      dueWhileLost = new Date().toISOString();
      await db().updateTable('magic_links').set({ wake_at: dueWhileLost }).where('id', '=', id).execute();
      await engine().drain();
      expect(await row(id)).toEqual({ claimed_by: null, wake_at: dueWhileLost });
    };
    const { lostId, runningWhenLost, backId } = await cut();
    expect(lostId).toBe(before);
    expect(runningWhenLost).toBe(0);
    expect(backId).not.toBe(before);
    expect(service.links.owner).toBe(backId);
    // the old id is dead to everyone; the new one is live and runs the link's step again
    const live = await other.live();
    expect(live).toContain(backId);
    expect(live).not.toContain(before);
    await engine().drain();
    // stepped: it waits for its deadline (10 days at most with a view limit) again
    expect((await row(id)).wake_at).toBe((await service.links.get(id)).expires_at);
    // and a change reaches it: a revocation ends it
    await service.links.end(id, 'revoked');
    expect((await service.links.get(id)).status).toBe('revoked');
  });

  it('leaves to the other process what that one claimed while this one was cut off', async () => {
    const id = await link('adopted@example.com');
    await engine().drain();
    const claims = new Claims(service.database, other);
    whileLost = async () => {
      // the other process takes the link's step between the cut and the reconnection
      const now = new Date();
      await db().updateTable('magic_links').set({ wake_at: now.toISOString() }).where('id', '=', id).execute();
      expect((await claims.due('magic_links', now, 10)).map((h) => h.id)).toEqual([id]);
    };
    await cut();
    await engine().drain();
    expect(await row(id)).toEqual({ claimed_by: other.id, wake_at: null });
    expect(engine().size).toBe(0);
  });
});
