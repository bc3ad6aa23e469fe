/**
 * A link's e-mail is sent under a lease (src/jobs/lease.ts), and its outcome is recorded only while
 * that lease is the one the sender took. Two processes on one database: A's send hangs past its
 * lease, B takes the lease over and sends; A's send then fails. What B recorded stands: the link
 * is `active` and sent once in its record, with one `magic_link.sent` and no `send_failed`.
 */
import { FakeClock } from '../../src/clock';
import type { EmbeddedEngine } from '../../src/engine/embedded';
import { Events } from '../../src/events';
import { MagicLinks, SEND_LEASE_MS } from '../../src/links';
import { linkKeyring } from '../../src/links/keyring';
import type { Mailer, Message } from '../../src/mail';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { linkRow } from '../support/rows';
import { BACKENDS, testService, type TestService } from '../support/service';

/** A mailer whose sends wait until the test ends them. */
function heldMailer() {
  const sends: { message: Message; fail: (err: Error) => void; pass: () => void }[] = [];
  const mailer: Mailer = {
    destination: 'test',
    send: (message) =>
      new Promise((resolve, reject) => {
        sends.push({ message, fail: reject, pass: () => resolve({ messageId: 'held' }) });
      }),
    check: async () => undefined,
    close: () => undefined,
  };
  return { mailer, sends };
}

describe.each(BACKENDS)('a link e-mail whose send lease was taken over (%s)', (backend) => {
  let t: TestService;
  const clock = new FakeClock();
  beforeAll(async () => {
    t = await testService({ backend, clock });
    // the service's own runner stands aside: to it the two processes below are dead, and it would
    // free and take their lease
    await (t.service.engine as EmbeddedEngine).fence();
    await t.service.apps.magicLink.put({});
    // events are written only for a subscriber
    await t.service.webhooks.create({
      url: 'https://hooks.example.com/paperlink',
      events: ['magic_link.sent', 'magic_link.send_failed'],
    });
  });
  afterAll(() => t.stop());

  const process = (owner: number, mailer: Mailer) => {
    const links = new MagicLinks(
      t.service.database.db,
      clock,
      mailer,
      t.service.apps.magicLink,
      new Events(clock),
      linkKeyring(t.config),
      t.service.database.inTransaction,
    );
    links.owner = owner;
    // both processes are alive: a lease is taken over only once it runs out
    links.live = async () => [1, 2];
    return links;
  };

  it("records the outcome of the sender that holds the lease, not the late one's", async () => {
    const db = t.service.database.db;
    const variables = (await t.service.templates.load(EXAMPLE_IDS.letter)).variables;
    const doc = await t.service.documents.generate(
      {
        template_id: EXAMPLE_IDS.letter,
        merge_parameters: Object.fromEntries(variables.map((v) => [v, 'x'])),
        destinations: { inkit_storage: {} },
      },
      { keyId: null, name: 'test' },
    );
    const id = 'ml_send_lease';
    await db
      .insertInto('magic_links')
      .values(
        linkRow(id, clock.now(), {
          document_id: doc.document_id,
          sent_at: null,
          send_attempts: 0,
          token_key: linkKeyring(t.config).current().id,
        }),
      )
      .execute();

    const slow = heldMailer();
    const fast = heldMailer();
    const a = process(1, slow.mailer);
    const b = process(2, fast.mailer);
    const sendingA = a.deliver(id, false);
    while (slow.sends.length === 0) await new Promise((resolve) => setImmediate(resolve));
    // A's send hangs past its lease; B takes the lease over and sends
    clock.advance(SEND_LEASE_MS + 1);
    const sendingB = b.deliver(id, false);
    while (fast.sends.length === 0) await new Promise((resolve) => setImmediate(resolve));
    fast.sends[0].pass();
    expect((await sendingB).sent).toBe(true);
    // A's mail server finally answers with a failure
    slow.sends[0].fail(Object.assign(new Error('421 try again later'), { code: 'EENVELOPE' }));
    expect((await sendingA).sent).toBe(false);

    const row = await db.selectFrom('magic_links').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'active', send_error: null, send_attempts: 1, sending_by: null });
    expect(row.sent_at).not.toBeNull();
    const events = await db.selectFrom('events').select('type').where('resource_id', '=', id).execute();
    expect(events.map((e) => e.type)).toEqual(['magic_link.sent']);
  });
});
