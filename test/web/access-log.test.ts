/**
 * A link's whole access log in the web app: its own page, newest first, a page at a time (a link's
 * card shows only the newest entries); an ended link opened again and again from one browser is one
 * entry that says how often.
 */
import { FakeClock } from '../../src/clock';
import { PAGE } from '../../src/web/context';
import { linkRow } from '../support/rows';
import { signInToWebApp, testService, type TestService } from '../support/service';

describe("the web app's access log", () => {
  let t: TestService;
  let cookie: string;
  const clock = new FakeClock('2026-11-27T10:00:00Z');
  beforeAll(async () => {
    t = await testService({ clock });
    cookie = (await signInToWebApp(t.app, t.key)).cookies.map((c) => `${c.name}=${c.value}`).join('; ');
  });
  afterAll(() => t?.stop());

  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { cookie } });
  /** The browsers of the page's rows, in order, and the link to older entries. */
  const read = (body: string) => ({
    rows: [...body.matchAll(/title="(scanner\/\d+|bot)"/g)].map((m) => m[1]),
    older: /href="([^"]+)"[^>]*>Older entries/.exec(body)?.[1]?.replace(/&amp;/g, '&'),
  });

  it('pages every entry, newest first, and counts a repeated refusal into one entry', async () => {
    await t.service.database.db
      .insertInto('magic_links')
      .values(linkRow('ml_log', clock.now(), { status: 'revoked' }))
      .execute();
    const total = 2 * PAGE + 20;
    for (let i = 0; i < total; i++) {
      clock.advance(1000);
      await t.service.links.record('ml_log', 'opened', 'unavailable', { ip: '203.0.113.9', userAgent: `scanner/${i}` });
    }
    for (let i = 0; i < 7; i++) await t.service.links.record('ml_log', 'opened', 'unavailable', { userAgent: 'bot' });

    const seen: string[] = [];
    const sizes: number[] = [];
    for (let url: string | undefined = '/app/links/ml_log/access_log'; url;) {
      const page = await get(url);
      expect(page.statusCode).toBe(200);
      const { rows, older } = read(page.body);
      if (seen.length === 0) expect(page.body).toMatch(/×7/);
      seen.push(...rows);
      sizes.push(rows.length);
      url = older;
    }
    expect(sizes).toEqual([PAGE, PAGE, 21]);
    expect(seen).toEqual(['bot', ...Array.from({ length: total }, (_, i) => `scanner/${total - 1 - i}`)]);
    expect((await get('/app/links/ml_nope/access_log')).statusCode).toBe(404);
  });
});
