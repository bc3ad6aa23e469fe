/**
 * Who may take over what, with several processes on one PostgreSQL database: a process's presence
 * is an advisory lock PostgreSQL drops when the process's connection goes (as when it dies); a claim
 * lasts one step, and a sweep frees only what processes that are gone held (due at once).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { postgresPresence, type Presence } from '../../src/db/presence';
import { Claims } from '../../src/engine/claims';
import type { Held } from '../../src/jobs/lease';
import { createService, type Service } from '../../src/service';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { freshPostgres } from '../support/service';

describe('claims and presence on PostgreSQL', () => {
  let service: Service;
  let dataDir: string;
  let databaseUrl: string;
  const presences: Presence[] = [];
  const presence = async () => {
    const p = await postgresPresence(databaseUrl);
    presences.push(p);
    return p;
  };
  /** Two processes on the one database, and the claims each makes. */
  const twoProcesses = async () => {
    const a = await presence();
    const b = await presence();
    return { a, b, claimsA: new Claims(service.database, a), claimsB: new Claims(service.database, b) };
  };
  /** No link waits for a wake-up: only those a test wakes are due. */
  const nothingDue = () =>
    db().updateTable('magic_links').set({ wake_at: null }).where('wake_at', 'is not', null).execute();

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

  const db = () => service.database.db;
  const ids = (held: Held[]) => held.map((h) => h.id);
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
  const wake = (id: string, at: string | null) =>
    db().updateTable('magic_links').set({ wake_at: at }).where('id', '=', id).execute();
  const claim = (id: string) =>
    db()
      .selectFrom('magic_links')
      .select(['claimed_by', 'wake_at', 'sending_by', 'sending_until'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();

  it('sees every live process, and a sweep frees only what a gone process held, its e-mail lease too', async () => {
    const { a, b, claimsA, claimsB } = await twoProcesses();
    expect((await a.live()).sort()).toEqual([a.id, b.id].sort());
    const mine = await link('mine@example.com');
    const theirs = await link('theirs@example.com');
    const now = new Date();
    const later = new Date(now.getTime() + 3_600_000).toISOString();
    await wake(theirs, later);
    expect(ids(await claimsA.due('magic_links', now, 10))).toEqual([mine]);
    await wake(theirs, now.toISOString());
    expect(ids(await claimsB.due('magic_links', now, 10))).toEqual([theirs]);
    // B holds it: A may not take it
    expect(ids(await claimsA.due('magic_links', now, 10))).toEqual([]);
    await db()
      .updateTable('magic_links')
      .set({ sending_by: b.id, sending_until: later })
      .where('id', '=', theirs)
      .execute();
    // A's own step under way is left be, and B's claim while B lives
    expect(await claimsA.sweep(now, new Set([mine]))).toBe(0);
    expect((await claim(mine)).claimed_by).toBe(a.id);
    // A's own claim with no step under way (a release that failed) is freed, due now
    expect(await claimsA.sweep(now, new Set())).toBe(1);
    expect(await claim(mine)).toMatchObject({ claimed_by: null, wake_at: now.toISOString() });

    // B's connection goes, as when its process dies
    await b.close();
    expect(await a.live()).toEqual([a.id]);
    expect(await claimsA.sweep(now, new Set())).toBe(2); // its lease, and its claim
    expect(await claim(theirs)).toEqual({
      claimed_by: null,
      wake_at: now.toISOString(),
      sending_by: null,
      sending_until: null,
    });
    expect(ids(await claimsA.due('magic_links', now, 10)).sort()).toEqual([mine, theirs].sort());
  });

  it('releases a step with its next wake-up, unless a change made the link due meanwhile', async () => {
    const a = await presence();
    const claims = new Claims(service.database, a);
    const id = await link('released@example.com');
    const now = new Date();
    await nothingDue();
    await wake(id, now.toISOString());
    const [held] = await claims.due('magic_links', now, 10);
    expect(held.id).toBe(id);
    const later = new Date(now.getTime() + 60_000);
    await claims.release('magic_links', [held], later);
    expect(await claim(id)).toMatchObject({ claimed_by: null, wake_at: later.toISOString() });
    expect(await claims.nextWake('magic_links')).toEqual(later);
    await wake(id, now.toISOString());
    const [again] = await claims.due('magic_links', now, 10);
    expect(again).toEqual({ id, epoch: held.epoch + 1 });
    // a view while the step runs: the step's plan does not hide it
    await claims.linkDue(id, now);
    await claims.release('magic_links', [again], later);
    expect(await claim(id)).toMatchObject({ claimed_by: null, wake_at: now.toISOString() });
  });

  it("fences a step whose lease was taken over: its release changes nothing of the new holder's", async () => {
    const { a, b, claimsA, claimsB } = await twoProcesses();
    const id = await link('fenced-step@example.com');
    const now = new Date();
    await nothingDue();
    await wake(id, now.toISOString());
    const [heldA] = await claimsA.due('magic_links', now, 10);
    // A is presumed dead (its presence went) while its step still runs; B frees and takes the link
    await a.close();
    expect(await claimsB.sweep(now, new Set())).toBe(1);
    const [heldB] = await claimsB.due('magic_links', now, 10);
    expect(heldB).toEqual({ id, epoch: heldA.epoch + 1 });
    // A's step ends: its release (planning a wake-up in an hour) is fenced out
    await claimsA.release('magic_links', [heldA], new Date(now.getTime() + 3_600_000));
    expect(await claim(id)).toMatchObject({ claimed_by: b.id, wake_at: null });
    await claimsB.release('magic_links', [heldB], null);
    expect(await claim(id)).toMatchObject({ claimed_by: null, wake_at: null });
  });

  it('fences each lease of a batch released together by its own epoch', async () => {
    const { b, claimsA, claimsB } = await twoProcesses();
    const kept = await link('batch-kept@example.com');
    const lost = await link('batch-lost@example.com');
    const now = new Date();
    await nothingDue();
    await wake(kept, now.toISOString());
    await wake(lost, now.toISOString());
    const heldA = await claimsA.due('magic_links', now, 10);
    expect(ids(heldA).sort()).toEqual([kept, lost].sort());
    // B takes one of the two over (A's lease on it was freed, as by a sweep), A's batch then ends
    await db()
      .updateTable('magic_links')
      .set({ claimed_by: null, wake_at: now.toISOString() })
      .where('id', '=', lost)
      .execute();
    const heldB = await claimsB.due('magic_links', now, 10);
    expect(heldB).toEqual([{ id: lost, epoch: heldA.find((h) => h.id === lost)!.epoch + 1 }]);
    await claimsA.release('magic_links', heldA, null);
    expect(await claim(kept)).toMatchObject({ claimed_by: null });
    expect(await claim(lost)).toMatchObject({ claimed_by: b.id });
  });
});
