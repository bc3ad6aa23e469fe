/**
 * The workflows against the frozen histories of test/workflows/histories: one JSON file per path a
 * run can take (written once by `npm run histories`, never by a test). Replay feeds each history to
 * the bundled workflow code: any command the code makes that the history does not have (another
 * activity, a timer too many, a missing child) fails. A change that breaks one must go behind
 * `patched()` instead; the last tests show that three such changes are caught.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger, makeTelemetryFilterString, Runtime, Worker } from '@temporalio/worker';
import { PATHS } from './histories/write';

const ROOT = path.resolve(__dirname, '../..');
const DIR = path.join(__dirname, 'histories');
const FILES = fs
  .readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();
const NON_DETERMINISM = /[Nn]ondeterminis|DeterminismViolation/;

type Bundle = { code: string };
const bundle = (workflowsPath: string): Promise<Bundle> =>
  bundleWorkflowCode({ workflowsPath, logger: new DefaultLogger('ERROR') });

/** Replays the named history files (of `dir`); returns each one's error (undefined when it replayed). */
async function replay(code: Bundle, files: string[], dir = DIR): Promise<Map<string, Error | undefined>> {
  const histories = files.map((f) => ({
    workflowId: f.replace(/\.json$/, ''),
    history: JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as unknown,
  }));
  const results = new Map<string, Error | undefined>();
  for await (const r of Worker.runReplayHistories({ workflowBundle: code, replayName: 'histories' }, histories))
    results.set(r.workflowId, r.error);
  return results;
}

beforeAll(() => {
  // determinism failures are expected below: keep the core's warnings about them quiet
  Runtime.install({
    logger: new DefaultLogger('ERROR'),
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR' }), forward: {} } },
  });
});

describe('frozen histories', () => {
  it('hold every path: generate, each way a link ends, a send retried, an unsent link, continue-as-new, postcards, webhook rounds', () => {
    expect(FILES.map((f) => f.replace(/\.json$/, ''))).toEqual([...PATHS].sort());
  });

  it("replay against today's workflows without a determinism error", async () => {
    const results = await replay(await bundle(path.join(ROOT, 'workflows/workflows.ts')), FILES);
    expect([...results.keys()].sort()).toEqual(FILES.map((f) => f.replace(/\.json$/, '')));
    const failed = [...results].filter(([, err]) => err).map(([id, err]) => `${id}: ${err!.message}`);
    expect(failed).toEqual([]);
  }, 120_000);
});

/**
 * Histories a real Temporal server recorded (test/workflows/server.test.ts and
 * test/e2e/engines.test.ts with PAPERLINK_EXPORT_HISTORIES=1 write those missing; never
 * rewritten): what the server really sends, which the hand-built ones imitate.
 */
describe('histories recorded by a real Temporal server', () => {
  const dir = path.join(DIR, 'server');
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort();

  it("replay against today's workflows without a determinism error", async () => {
    // every path a run can take
    expect(files).toEqual([
      'generate.stored.json',
      'generate.with-link.json',
      'link.expired-by-ten-day-cap.json',
      'link.expired-by-time.json',
      'link.expired-by-views.json',
      'link.expired-from-opening.json',
      'link.resent.json',
      'link.revoked-by-api.json',
      'link.revoked-by-update.json',
      'postcard.failed.json',
      'postcard.rendered.json',
      'webhooks.rounds.json',
    ]);
    const results = await replay(await bundle(path.join(ROOT, 'workflows/workflows.ts')), files, dir);
    const failed = [...results].filter(([, err]) => err).map(([id, err]) => `${id}: ${err!.message}`);
    expect(failed).toEqual([]);
    expect(results.size).toBe(files.length);
  }, 120_000);
});

/**
 * Changes that alter what running workflows recorded, each made to a copy of the workflow sources
 * (bundled from a folder inside the project, so packages resolve as usual), each caught by a
 * frozen history at the command it changed.
 */
const CHANGES = [
  {
    name: 'an extra expireLink after a failed resend',
    file: 'src/flows/link.ts',
    from: "(current.status === 'active' || current.status === 'send_failed')\n      )\n        await p.activities.deliverLink(id);",
    to: "(current.status === 'active' || current.status === 'send_failed')\n      ) {\n        if (!(await p.activities.deliverLink(id))) await p.activities.expireLink(id);\n      }",
    caughtBy: ['link.send-retried.json', 'link.v0-send-retried.json'],
    at: /'linkState' does not match activity type of activity command 'expireLink'/,
  },
  {
    name: 'an extra deliverWebhooks before continue-as-new',
    file: 'workflows/workflows.ts',
    from: "if (outcome === 'more') await continueAsNew<typeof webhookDispatch>();",
    to: "if (outcome === 'more') { await webhookActivities.deliverWebhooks(); await continueAsNew<typeof webhookDispatch>(); }",
    caughtBy: ['webhooks.continued-as-new.json'],
    at: /WorkflowExecutionContinuedAsNew/,
  },
  {
    name: 'giving up a postcard after 3 attempts',
    file: 'src/flows/postcard.ts',
    from: 'onError(err);',
    to: "onError(err);\n      if (attempt >= 2) return 'failed';",
    caughtBy: ['postcard.v0-retried.json'],
    at: /TimerStarted/,
  },
];

describe.each(CHANGES)('a change to running workflows: $name', (change) => {
  const copy = path.join(ROOT, '.replay-variants', change.name.replace(/\W+/g, '-'));

  afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

  it(`fails the replay of ${change.caughtBy.join(' and ')}`, async () => {
    for (const dir of ['workflows', 'src/flows']) fs.mkdirSync(path.join(copy, dir), { recursive: true });
    for (const f of [
      'workflows/workflows.ts',
      'workflows/common.ts',
      ...fs.readdirSync(path.join(ROOT, 'src/flows')).map((f) => `src/flows/${f}`),
    ]) {
      fs.copyFileSync(path.join(ROOT, f), path.join(copy, f));
    }
    const target = path.join(copy, change.file);
    const source = fs.readFileSync(target, 'utf8');
    // the change must apply: a test that edits nothing would prove nothing
    expect(source.split(change.from)).toHaveLength(2);
    fs.writeFileSync(target, source.replace(change.from, change.to));
    const results = await replay(await bundle(path.join(copy, 'workflows/workflows.ts')), change.caughtBy);
    for (const f of change.caughtBy) {
      const message = results.get(f.replace(/\.json$/, ''))?.message;
      expect(message).toMatch(NON_DETERMINISM);
      expect(message).toMatch(change.at);
    }
  }, 120_000);
});
