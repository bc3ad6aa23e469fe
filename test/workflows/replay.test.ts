/**
 * The workflows against histories the server would record, built by hand (no Temporal server can
 * run here). Replay feeds each history to the bundled workflow code: any command the code makes
 * that the history does not have (another activity, a timer too many, a missing child) fails.
 */
import { bundleWorkflowCode, DefaultLogger, makeTelemetryFilterString, Runtime, Worker } from '@temporalio/worker';
import { HistoryBuilder } from '../support/history';

const WORKFLOWS = require.resolve('../../workflows/workflows.ts');
let bundle: { code: string };

beforeAll(async () => {
  // determinism failures are expected below: keep the core's warnings about them quiet
  Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR' }), forward: {} } } });
  bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS, logger: new DefaultLogger('ERROR') });
}, 60_000);

const replay = (h: HistoryBuilder, id: string) => Worker.runReplayHistory({ workflowBundle: bundle, replayName: id }, h.toHistory(), id);

const renderResult = (link?: string) => ({ id: 'rnd_1', object: 'render', document_id: 'doc_1', status: 'completed', template_id: 'tmpl_example_letter', destinations: {}, warnings: [], created_at: '2026-11-22T10:00:00.000Z', ...(link ? { magic_link_piece_id: link } : {}) });

describe('generate', () => {
  const input = { body: { template_id: 'tmpl_example_letter' }, caller: { keyId: null, name: 'test' }, renderId: 'rnd_1' };

  it('replays a render that stored the document', async () => {
    const h = new HistoryBuilder('generate', [input]).task();
    h.call('generateDocument', [input], renderResult());
    h.task().complete(renderResult());
    await replay(h, 'generate-rnd_1');
  });

  it('replays a render with a Magic Link, which starts the link lifecycle as workflow link-<id>', async () => {
    const h = new HistoryBuilder('generate', [input]).task();
    h.call('generateDocument', [input], renderResult('ml_1'));
    h.task().child('linkLifecycle', 'link-ml_1', ['ml_1']);
    h.task().complete(renderResult('ml_1'));
    await replay(h, 'generate-rnd_1');
  });

  it('fails the replay when the history lacks the child a link needs (the check has teeth)', async () => {
    const h = new HistoryBuilder('generate', [input]).task();
    h.call('generateDocument', [input], renderResult('ml_1'));
    h.task().complete(renderResult('ml_1'));
    await expect(replay(h, 'generate-rnd_1')).rejects.toThrow(/[Nn]ondeterminis|DeterminismViolation/);
  });
});

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.parse('2026-11-22T10:00:00Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const state = (s: Partial<{ status: string; sent: boolean; sendAttempts: number; expiresAt: string | null; viewsLeft: number | null }>) => ({ status: 'active', sent: true, sendAttempts: 1, expiresAt: null, viewsLeft: null, ...s });
const NON_DETERMINISM = /[Nn]ondeterminis|DeterminismViolation/;

describe('link lifecycle', () => {
  const id = 'link-ml_1';
  /** The first task reads the link; the second waits on a timer until `expiresAt`. */
  const waiting = (first: ReturnType<typeof state>) => {
    const h = new HistoryBuilder('linkLifecycle', ['ml_1'], T0).task();
    h.call('linkState', ['ml_1'], first);
    h.task();
    return { h, timer: first.expiresAt ? h.timer(Date.parse(first.expiresAt) - T0) : undefined };
  };

  it('expires by time: the timer fires at the deadline, the link is read again and expired', async () => {
    const s = state({ expiresAt: at(24 * HOUR) });
    const { h, timer } = waiting(s);
    h.advance(24 * HOUR).fireTimer(timer!);
    h.task().call('linkState', ['ml_1'], s);
    h.task().call('expireLink', ['ml_1'], undefined);
    h.task().complete('expired');
    await replay(h, id);
  });

  it('expires by views: the view that used the last one signals, and the workflow ends without another timer', async () => {
    const { h, timer } = waiting(state({ expiresAt: at(10 * DAY), viewsLeft: 3 }));
    h.advance(HOUR).signal('viewed');
    h.task().cancelTimer(timer!);
    h.call('linkState', ['ml_1'], state({ status: 'expired', expiresAt: at(10 * DAY), viewsLeft: 0 }));
    h.task().complete('expired');
    await replay(h, id);
  });

  it('expires by the 10-day cap: a view-limited link never used to the end expires ten days after creation', async () => {
    const s = state({ expiresAt: at(10 * DAY), viewsLeft: 5 });
    const { h, timer } = waiting(s);
    h.advance(10 * DAY).fireTimer(timer!);
    h.task().call('linkState', ['ml_1'], s);
    h.task().call('expireLink', ['ml_1'], undefined);
    h.task().complete('expired');
    await replay(h, id);
  });

  it('ends as revoked when the operator revokes it (the API signals the change)', async () => {
    const { h, timer } = waiting(state({ expiresAt: at(7 * DAY) }));
    h.advance(HOUR).signal('changed');
    h.task().cancelTimer(timer!);
    h.call('linkState', ['ml_1'], state({ status: 'revoked', expiresAt: at(7 * DAY) }));
    h.task().complete('revoked');
    await replay(h, id);
  });

  it('revokes through the expire update: the handler revokes, reads the link, and the lifecycle ends', async () => {
    const { h, timer } = waiting(state({ expiresAt: at(7 * DAY) }));
    h.advance(HOUR).task();
    const accepted = h.acceptUpdate('expire', 'upd-1', { reason: 'test' });
    h.call('revokeLink', ['ml_1'], undefined);
    const revoked = state({ status: 'revoked', expiresAt: at(7 * DAY) });
    h.task().call('linkState', ['ml_1'], revoked);
    h.task().completeUpdate('upd-1', accepted, revoked);
    h.cancelTimer(timer!);
    h.call('linkState', ['ml_1'], revoked);
    h.task().complete('revoked');
    await replay(h, id);
  });

  it('starts the timer at the first opening: no timer before it, then one until the new deadline', async () => {
    const { h } = waiting(state({}));
    h.advance(2 * DAY).signal('opened');
    const opened = state({ expiresAt: at(2 * DAY + HOUR) });
    h.task().call('linkState', ['ml_1'], opened);
    h.task();
    const timer = h.timer(HOUR);
    h.advance(HOUR).fireTimer(timer);
    h.task().call('linkState', ['ml_1'], opened);
    h.task().call('expireLink', ['ml_1'], undefined);
    h.task().complete('expired');
    await replay(h, id);
  });

  it('retries a failed e-mail after a minute, then waits for the deadline', async () => {
    const unsent = state({ status: 'send_failed', sent: false, sendAttempts: 1, expiresAt: at(DAY) });
    const h = new HistoryBuilder('linkLifecycle', ['ml_1'], T0).task();
    h.call('linkState', ['ml_1'], unsent);
    // the retry timer (1 min) is shorter than the deadline: that is the one the workflow starts
    const retry = h.task().timer(60_000);
    h.advance(60_000).fireTimer(retry);
    h.task().call('linkState', ['ml_1'], unsent);
    h.task().call('deliverLink', ['ml_1'], true);
    const sent = state({ sendAttempts: 2, expiresAt: at(DAY) });
    h.task().call('linkState', ['ml_1'], sent);
    h.task();
    h.timer(DAY - 60_000);
    await replay(h, id);
  });

  it('fails the replay of a history from a workflow that expired without waiting (the check has teeth)', async () => {
    const h = new HistoryBuilder('linkLifecycle', ['ml_1'], T0).task();
    h.call('linkState', ['ml_1'], state({ expiresAt: at(HOUR) }));
    h.task().call('expireLink', ['ml_1'], undefined);
    h.task().complete('expired');
    await expect(replay(h, id)).rejects.toThrow(NON_DETERMINISM);
  });
});

describe('postcard intake', () => {
  const id = 'postcard-pc_1';

  it('replays a postcard rendered', async () => {
    const h = new HistoryBuilder('postcardIntake', ['pc_1'], T0).task();
    h.call('renderPostcard', ['pc_1'], 'rendered');
    h.task().complete('rendered');
    await replay(h, id);
  });

  it('replays a postcard that failed (a merge field nothing fills): no retry', async () => {
    const h = new HistoryBuilder('postcardIntake', ['pc_1'], T0).task();
    h.call('renderPostcard', ['pc_1'], 'failed');
    h.task().complete('failed');
    await replay(h, id);
  });

  it('waits and renders again after the activity gave up on an unexpected error', async () => {
    const h = new HistoryBuilder('postcardIntake', ['pc_1'], T0).task();
    h.failActivity(h.activity('renderPostcard', 'pc_1'), 'database unavailable');
    h.task();
    const wait = h.timer(1_000);
    h.advance(1_000).fireTimer(wait);
    h.task().call('renderPostcard', ['pc_1'], 'rendered');
    h.task().complete('rendered');
    await replay(h, id);
  });

  it('fails the replay when the history shows no retry after the error (the check has teeth)', async () => {
    const h = new HistoryBuilder('postcardIntake', ['pc_1'], T0).task();
    h.failActivity(h.activity('renderPostcard', 'pc_1'), 'database unavailable');
    h.task().complete('failed');
    await expect(replay(h, id)).rejects.toThrow(NON_DETERMINISM);
  });
});

describe('webhook dispatch', () => {
  const id = 'webhooks-paperlink';

  it('delivers, waits for the next retry or a wake signal, and ends idle after an hour with nothing pending', async () => {
    const h = new HistoryBuilder('webhookDispatch', [], T0).task();
    h.call('deliverWebhooks', [], at(30_000));
    const retry = h.task().timer(30_000);
    h.advance(5_000).signal('wake');
    h.task().cancelTimer(retry);
    h.call('deliverWebhooks', [], null);
    const idle = h.task().timer(HOUR);
    h.advance(HOUR).fireTimer(idle);
    h.task().complete('idle');
    await replay(h, id);
  });

  it('fails the replay when the history shows no wait between rounds (the check has teeth)', async () => {
    const h = new HistoryBuilder('webhookDispatch', [], T0).task();
    h.call('deliverWebhooks', [], at(30_000));
    h.task().call('deliverWebhooks', [], null);
    await expect(replay(h, id)).rejects.toThrow(NON_DETERMINISM);
  });
});
