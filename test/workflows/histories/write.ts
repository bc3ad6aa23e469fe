/**
 * Writes the frozen replay histories of this folder: one JSON file per path a workflow can take,
 * as the Temporal server records it (the format `temporal workflow show --output json` writes).
 * test/workflows/replay.test.ts replays every file here against today's workflow code.
 *
 * Run once when a workflow gains a path: `npm run histories`. It writes only files that do not
 * exist and never changes one: a history is what a running workflow has already recorded, so a
 * change to the code that breaks one goes behind `patched()` (docs/temporal.md), never into a
 * rewritten file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { HistoryBuilder } from '../../support/history';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.parse('2026-11-23T10:00:00Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const state = (s: Partial<{ status: string; sent: boolean; sendAttempts: number; sendingUntil: string | null; expiresAt: string | null; viewsLeft: number | null }>) => ({
  status: 'active',
  sent: true,
  sendAttempts: 1,
  sendingUntil: null,
  expiresAt: null,
  viewsLeft: null,
  ...s,
});

/** Every change a link lifecycle run of today records in its first task, in the order the flow asks. */
const LINK_PATCHES = ['link-clear-changed-before-read', 'link-send-unsent', 'link-continue-as-new'];

/** A link lifecycle's first task (patch markers, the state read) and the task after it. */
function link(first: ReturnType<typeof state>, patches = LINK_PATCHES): HistoryBuilder {
  const h = new HistoryBuilder('linkLifecycle', ['ml_1'], T0).task();
  for (const p of patches) h.patch(p);
  h.call('linkState', ['ml_1'], first);
  return h.task();
}

/** A link whose e-mail failed: retried after a minute (fails again), after five more (sent), then it waits for its deadline. */
function sendRetried(patches?: string[]): HistoryBuilder {
  const failed = state({ status: 'send_failed', sent: false, sendAttempts: 1, expiresAt: at(DAY) });
  const h = link(failed, patches);
  const first = h.timer(60_000);
  h.advance(60_000).fireTimer(first);
  h.task().call('linkState', ['ml_1'], failed);
  h.task().call('deliverLink', ['ml_1'], false);
  const again = state({ status: 'send_failed', sent: false, sendAttempts: 2, expiresAt: at(DAY) });
  h.task().call('linkState', ['ml_1'], again);
  const second = h.task().timer(300_000);
  h.advance(300_000).fireTimer(second);
  h.task().call('linkState', ['ml_1'], again);
  h.task().call('deliverLink', ['ml_1'], true);
  h.task().call('linkState', ['ml_1'], state({ sendAttempts: 3, expiresAt: at(DAY) }));
  h.task().timer(DAY - 360_000);
  return h;
}

const render = (link?: string) => ({ id: 'rnd_1', object: 'render', document_id: 'doc_1', status: 'completed', template_id: 'tmpl_example_letter', destinations: {}, warnings: [], created_at: at(0), ...(link ? { magic_link_piece_id: link } : {}) });
const generateInput = { body: { template_id: 'tmpl_example_letter' }, caller: { keyId: null, name: 'test' }, renderId: 'rnd_1' };

/** File name (without .json) → the history of that path. The part before the first dot is the workflow id's prefix. */
const histories: Record<string, () => HistoryBuilder> = {
  'generate.stored': () => {
    const h = new HistoryBuilder('generate', [generateInput], T0).task();
    h.call('generateDocument', [generateInput], render());
    return h.task().complete(render());
  },
  'generate.magic-link': () => {
    const h = new HistoryBuilder('generate', [generateInput], T0).task();
    h.call('generateDocument', [generateInput], render('ml_1'));
    h.task().child('linkLifecycle', 'link-ml_1', ['ml_1']);
    return h.task().complete(render('ml_1'));
  },

  // TEMPORAL_SEARCH_ATTRIBUTES: the run is found by its document too
  'generate.indexed': () => {
    const input = { ...generateInput, indexed: true };
    const h = new HistoryBuilder('generate', [input], T0).task();
    h.call('generateDocument', [input], render());
    return h.task().upsertKeywords({ PaperlinkDocumentId: 'doc_1' }).complete(render());
  },

  'link.expired-by-time': () => {
    const s = state({ expiresAt: at(DAY) });
    const h = link(s);
    const timer = h.timer(DAY);
    h.advance(DAY).fireTimer(timer);
    h.task().call('linkState', ['ml_1'], s);
    h.task().call('expireLink', ['ml_1'], undefined);
    return h.task().complete('expired');
  },
  'link.expired-by-views': () => {
    const h = link(state({ expiresAt: at(10 * DAY), viewsLeft: 3 }));
    const timer = h.timer(10 * DAY);
    h.advance(HOUR).signal('viewed');
    h.task().cancelTimer(timer);
    h.call('linkState', ['ml_1'], state({ status: 'expired', expiresAt: at(10 * DAY), viewsLeft: 0 }));
    return h.task().complete('expired');
  },
  'link.expired-by-10-day-cap': () => {
    const s = state({ expiresAt: at(10 * DAY), viewsLeft: 5 });
    const h = link(s);
    const timer = h.timer(10 * DAY);
    h.advance(10 * DAY).fireTimer(timer);
    h.task().call('linkState', ['ml_1'], s);
    h.task().call('expireLink', ['ml_1'], undefined);
    return h.task().complete('expired');
  },
  'link.revoked-by-api': () => {
    const h = link(state({ expiresAt: at(7 * DAY) }));
    const timer = h.timer(7 * DAY);
    h.advance(HOUR).signal('changed');
    h.task().cancelTimer(timer);
    h.call('linkState', ['ml_1'], state({ status: 'revoked', expiresAt: at(7 * DAY) }));
    return h.task().complete('revoked');
  },
  'link.revoked-by-update': () => {
    const h = link(state({ expiresAt: at(7 * DAY) }));
    const timer = h.timer(7 * DAY);
    h.advance(HOUR).task();
    const accepted = h.acceptUpdate('expire', 'upd-1', { reason: 'test' });
    h.call('revokeLink', ['ml_1'], undefined);
    const revoked = state({ status: 'revoked', expiresAt: at(7 * DAY) });
    h.task().call('linkState', ['ml_1'], revoked);
    h.task().completeUpdate('upd-1', accepted, revoked);
    h.cancelTimer(timer);
    h.call('linkState', ['ml_1'], revoked);
    return h.task().complete('revoked');
  },
  'link.timer-from-opening': () => {
    const h = link(state({}));
    h.advance(2 * DAY).signal('opened');
    const opened = state({ expiresAt: at(2 * DAY + HOUR) });
    h.task().call('linkState', ['ml_1'], opened);
    const timer = h.task().timer(HOUR);
    h.advance(HOUR).fireTimer(timer);
    h.task().call('linkState', ['ml_1'], opened);
    h.task().call('expireLink', ['ml_1'], undefined);
    return h.task().complete('expired');
  },
  'link.notified-at-end': () => {
    // since 'link-notices': the end notice is sent after the link ended, then the run ends
    const s = { ...state({ expiresAt: at(DAY) }), notices: [], remindAt: null };
    const h = link(s, [...LINK_PATCHES, 'link-notices']);
    const timer = h.timer(DAY);
    h.advance(DAY).fireTimer(timer);
    h.task().call('linkState', ['ml_1'], s);
    h.task().call('expireLink', ['ml_1'], undefined);
    h.task().call('linkState', ['ml_1'], { ...s, status: 'expired', notices: ['ended'] });
    h.task().call('notifyLink', ['ml_1'], true);
    h.task().call('linkState', ['ml_1'], { ...s, status: 'expired' });
    return h.task().complete('expired');
  },
  'link.notice-retried-each-minute': () => {
    // before 'link-notice-policy': a notice that failed was tried again a minute later, by a timer
    const ended = { ...state({}), status: 'expired', notices: ['ended'], remindAt: null };
    const h = link(ended, [...LINK_PATCHES, 'link-notices']);
    h.call('notifyLink', ['ml_1'], false);
    const timer = h.task().timer(60_000);
    h.advance(60_000).fireTimer(timer);
    h.task().call('linkState', ['ml_1'], ended);
    h.task().call('notifyLink', ['ml_1'], true);
    h.task().call('linkState', ['ml_1'], { ...ended, notices: [] });
    return h.task().complete('expired');
  },
  'link.notice-given-up': () => {
    // since 'link-notice-policy': a failed notice is due again at its policy's time (the state's
    // remindAt), waited for like any wake-up; once given up, nothing is due and the run ends
    const ended = { ...state({}), status: 'expired', notices: ['ended'], remindAt: null };
    const h = link(ended, [...LINK_PATCHES, 'link-notices', 'link-notice-policy']);
    h.call('notifyLink', ['ml_1'], false);
    h.task().call('linkState', ['ml_1'], { ...ended, notices: [], remindAt: at(60_000) });
    const timer = h.task().timer(60_000);
    h.advance(60_000).fireTimer(timer);
    h.task().call('linkState', ['ml_1'], ended);
    h.task().call('notifyLink', ['ml_1'], false);
    h.task().call('linkState', ['ml_1'], { ...ended, notices: [] });
    return h.task().complete('expired');
  },
  'link.send-retried': () => sendRetried(),
  'link.unsent-after-crash': () => {
    const lease = at(120_000);
    const h = link(state({ sent: false, sendAttempts: 0, sendingUntil: lease, expiresAt: at(DAY) }));
    const timer = h.timer(120_000);
    h.advance(120_000).fireTimer(timer);
    h.task().call('linkState', ['ml_1'], state({ sent: false, sendAttempts: 0, sendingUntil: lease, expiresAt: at(DAY) }));
    h.task().call('deliverLink', ['ml_1'], true);
    h.task().call('linkState', ['ml_1'], state({ expiresAt: at(DAY) }));
    h.task().timer(DAY - 120_000);
    return h;
  },
  'link.continued-as-new': () => {
    const s = state({ expiresAt: at(300 * DAY) });
    const h = link(s);
    const timer = h.timer(300 * DAY);
    h.advance(HOUR).signal('opened');
    h.task().cancelTimer(timer);
    h.call('linkState', ['ml_1'], s);
    return h.task({ suggestContinueAsNew: true }).continueAsNew(['ml_1']);
  },
  // a run started before the link-* patches: it replays the old branches
  'link.v0-send-retried': () => sendRetried([]),

  // an engineer's workflow waits for a link (awaitLink): read, a timer, read again until viewed
  'link-watch.viewed': () => {
    const unseen = { ...state({ expiresAt: at(DAY) }), views: 0 };
    const seen = { ...unseen, views: 1 };
    const h = new HistoryBuilder('linkWatch', ['ml_1', 'viewed', 60_000], T0).task();
    h.call('peekLink', ['ml_1'], unseen);
    const timer = h.task().timer(60_000);
    h.advance(60_000).fireTimer(timer);
    h.task().call('peekLink', ['ml_1'], seen);
    return h.task().complete(seen);
  },
  'link-watch.continued-as-new': () => {
    const h = new HistoryBuilder('linkWatch', ['ml_1', 'ended', 60_000], T0).task();
    h.call('peekLink', ['ml_1'], { ...state({ expiresAt: at(300 * DAY) }), views: 0 });
    return h.task({ suggestContinueAsNew: true }).continueAsNew(['ml_1', 'ended', 60_000]);
  },

  'postcard.rendered': () => {
    const h = new HistoryBuilder('postcardIntake', ['pc_1'], T0).task();
    h.patch('postcard-retry-policy').call('renderPostcard', ['pc_1'], 'rendered');
    return h.task().complete('rendered');
  },
  'postcard.failed': () => {
    const h = new HistoryBuilder('postcardIntake', ['pc_1'], T0).task();
    h.patch('postcard-retry-policy').call('renderPostcard', ['pc_1'], 'failed');
    return h.task().complete('failed');
  },
  // a run started before postcard-retry-policy: the workflow itself waited between attempts
  'postcard.v0-retried': () => {
    const h = new HistoryBuilder('postcardIntake', ['pc_1'], T0).task();
    for (const wait of [1_000, 5_000, 30_000, 120_000]) {
      h.failActivity(h.activity('renderPostcard', 'pc_1'), 'database unavailable');
      const timer = h.task().timer(wait);
      h.advance(wait).fireTimer(timer);
      h.task();
    }
    h.call('renderPostcard', ['pc_1'], 'rendered');
    return h.task().complete('rendered');
  },

  'webhooks.idle': () => {
    const h = new HistoryBuilder('webhookDispatch', [], T0).task();
    h.call('deliverWebhooks', [], at(30_000));
    const retry = h.task().timer(30_000);
    h.advance(5_000).signal('wake');
    h.task().cancelTimer(retry);
    h.call('deliverWebhooks', [], null);
    const idle = h.task().timer(HOUR);
    h.advance(HOUR).fireTimer(idle);
    return h.task().complete('idle');
  },
  // a run an older build started, woken after the change: it ends, the dispatchers deliver instead
  'webhooks.ended-in-every-process': () => {
    const h = new HistoryBuilder('webhookDispatch', [], T0).task();
    h.call('deliverWebhooks', [], at(30_000));
    const retry = h.task().timer(30_000);
    h.advance(5_000).signal('wake');
    h.task().cancelTimer(retry);
    return h.patch('webhooks-in-every-process').complete('idle');
  },
  'webhooks.continued-as-new': () => {
    const h = new HistoryBuilder('webhookDispatch', [], T0).task();
    let now = 0;
    for (let round = 0; round < 100; round++) {
      h.call('deliverWebhooks', [], at(now + 30_000));
      const timer = h.task().timer(30_000);
      now += 30_000;
      h.advance(30_000).fireTimer(timer);
      h.task();
    }
    return h.continueAsNew([]);
  },
};

/** One event per line: a diff shows which event a change touched. */
function format(json: string): string {
  const { events } = JSON.parse(json) as { events: unknown[] };
  return `{"events": [\n${events.map((e) => JSON.stringify(e)).join(',\n')}\n]}\n`;
}

if (require.main === module) {
  const dir = __dirname.endsWith('dist') ? path.resolve(__dirname, '../test/workflows/histories') : __dirname;
  let written = 0;
  for (const [name, build] of Object.entries(histories)) {
    const file = path.join(dir, `${name}.json`);
    if (fs.existsSync(file)) continue;
    fs.writeFileSync(file, format(build().toJSON()));
    console.log(`wrote ${path.relative(process.cwd(), file)}`);
    written++;
  }
  console.log(`${written} new, ${Object.keys(histories).length - written} kept as they were`);
}

export const PATHS = Object.keys(histories);
