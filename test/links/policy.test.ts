import { ValidationError } from '../../src/errors';
import {
  deadlineAtCreation,
  deadlineAtOpening,
  limitsForRecipient,
  mayOpen,
  parseLinkSettings,
  watermarkText,
} from '../../src/links/policy';

const created = new Date('2026-11-22T10:00:00Z');
const parse = (s: unknown) => parseLinkSettings(s, 'magic_link');
function fieldsOf(s: unknown): Record<string, string> {
  try {
    parse(s);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    return Object.fromEntries(err.details.map((d) => [d.field, d.code ?? '']));
  }
  throw new Error('no error');
}

describe('Magic Link settings', () => {
  it("accepts the spec's example as is and defaults auth_email and auth_type", () => {
    const s = parse({
      retain_from_created: { hours: 24 },
      auth_email: 'auth@example.com',
      recipient_email: 'to@example.com',
      expire_after_n_views: 3,
    });
    expect(s).toEqual({
      recipientEmail: 'to@example.com',
      authEmail: 'auth@example.com',
      authType: 'email',
      maxViews: 3,
      retention: { from: 'created', unit: 'hours', amount: 24 },
      // the sharing settings the spec does not name: none, downloads allowed, nobody else
      watermark: null,
      allowDownload: true,
      allowedViewers: [],
      notifySender: null,
      remindBefore: null,
      message: null,
    });
    expect(parse({ recipient_email: 'to@example.com', expire_after_n_views: 1 })).toMatchObject({
      authEmail: 'to@example.com',
      authType: 'email',
      retention: null,
    });
  });

  it.each([
    ['no limit', { recipient_email: 'a@example.com' }, { magic_link: 'no_limit' }],
    ['no recipient', { expire_after_n_views: 1 }, { 'magic_link.recipient_email': 'required' }],
    [
      'bad e-mails',
      { recipient_email: 'nope', auth_email: 'a@', expire_after_n_views: 1 },
      { 'magic_link.recipient_email': 'invalid_email', 'magic_link.auth_email': 'invalid_email' },
    ],
    [
      'zero views',
      { recipient_email: 'a@example.com', expire_after_n_views: 0 },
      { 'magic_link.expire_after_n_views': 'range' },
    ],
    [
      'negative hours',
      { recipient_email: 'a@example.com', retain_from_created: { hours: -1 } },
      { 'magic_link.retain_from_created.hours': 'range' },
    ],
    [
      'fractional days',
      { recipient_email: 'a@example.com', retain_from_created: { days: 1.5 } },
      { 'magic_link.retain_from_created.days': 'range' },
    ],
    [
      'two units',
      { recipient_email: 'a@example.com', retain_from_created: { hours: 1, days: 1 } },
      { 'magic_link.retain_from_created': 'one_unit' },
    ],
    [
      'unknown unit',
      { recipient_email: 'a@example.com', retain_from_opened: { weeks: 1 } },
      { 'magic_link.retain_from_opened.weeks': 'unknown_unit' },
    ],
    [
      'both timers',
      { recipient_email: 'a@example.com', retain_from_created: { hours: 1 }, retain_from_opened: { hours: 1 } },
      { 'magic_link.retain_from_opened': 'conflict' },
    ],
    [
      'over 10 years',
      { recipient_email: 'a@example.com', retain_from_created: { days: 3700 } },
      { 'magic_link.retain_from_created.days': 'range' },
    ],
    [
      'bad auth type',
      { recipient_email: 'a@example.com', expire_after_n_views: 1, auth_type: 'sms' },
      { 'magic_link.auth_type': 'invalid' },
    ],
    [
      'unknown field',
      { recipient_email: 'a@example.com', expire_after_n_views: 1, retain: 1 },
      { 'magic_link.retain': 'unknown_field' },
    ],
  ])('refuses %s, one detail per field', (_name, settings, expected) => {
    expect(fieldsOf(settings)).toEqual(expected);
  });
});

describe('Magic Link deadlines', () => {
  const at = (s: unknown) => deadlineAtCreation(parse(s), created)?.toISOString() ?? null;

  it.each([
    [{ minutes: 30 }, '2026-11-22T10:30:00.000Z'],
    [{ hours: 24 }, '2026-11-23T10:00:00.000Z'],
    [{ days: 3 }, '2026-11-25T10:00:00.000Z'],
  ])('a timer from creation of %j ends at %s', (retain, end) => {
    expect(at({ recipient_email: 'a@example.com', retain_from_created: retain })).toBe(end);
  });

  it('caps a link with a view limit at 10 days, whatever else is set', () => {
    expect(at({ recipient_email: 'a@example.com', expire_after_n_views: 5 })).toBe('2026-12-02T10:00:00.000Z');
    expect(at({ recipient_email: 'a@example.com', expire_after_n_views: 5, retain_from_created: { days: 30 } })).toBe(
      '2026-12-02T10:00:00.000Z',
    );
    expect(at({ recipient_email: 'a@example.com', expire_after_n_views: 5, retain_from_created: { hours: 2 } })).toBe(
      '2026-11-22T12:00:00.000Z',
    );
  });

  it('starts a timer from opening at the first opening, never beyond the 10-day cap', () => {
    const fromOpening = parse({ recipient_email: 'a@example.com', retain_from_opened: { hours: 2 } });
    expect(deadlineAtOpening(fromOpening, null, new Date('2026-11-24T08:00:00Z'))?.toISOString()).toBe(
      '2026-11-24T10:00:00.000Z',
    );
    const capped = parse({
      recipient_email: 'a@example.com',
      retain_from_opened: { days: 5 },
      expire_after_n_views: 2,
    });
    const cap = deadlineAtCreation(capped, created);
    expect(cap?.toISOString()).toBe('2026-12-02T10:00:00.000Z');
    expect(deadlineAtOpening(capped, cap, new Date('2026-11-30T10:00:00Z'))?.toISOString()).toBe(
      '2026-12-02T10:00:00.000Z',
    );
    expect(deadlineAtOpening(capped, cap, new Date('2026-11-23T10:00:00Z'))?.toISOString()).toBe(
      '2026-11-28T10:00:00.000Z',
    );
  });

  it('bounds a link that runs from its opening and has no view limit: opened within 10 days, then its whole timer', () => {
    const month = parse({ recipient_email: 'a@example.com', retain_from_opened: { days: 30 } });
    const bound = deadlineAtCreation(month, created);
    expect(bound?.toISOString()).toBe('2026-12-02T10:00:00.000Z');
    // opened on the ninth day: thirty days from then, past the bound on opening
    expect(deadlineAtOpening(month, bound, new Date('2026-12-01T10:00:00Z'))?.toISOString()).toBe(
      '2026-12-31T10:00:00.000Z',
    );
  });

  it('says every limit in the e-mail, with the date and its zone, for each combination of rules', () => {
    const words = (input: Record<string, unknown>, opened = false) => {
      const s = parse({ recipient_email: 'a@example.com', ...input });
      const deadline = opened
        ? deadlineAtOpening(s, deadlineAtCreation(s, created), new Date('2026-11-23T10:00:00Z'))
        : deadlineAtCreation(s, created);
      return limitsForRecipient(s, deadline, 30, opened);
    };
    expect(words({ retain_from_created: { hours: 1 } })).toBe('The link works until Sun 22 Nov 2026, 11:00 UTC.');
    // views alone: the 10-day cap is said, never a longer time
    expect(words({ expire_after_n_views: 3 })).toMatch(
      /^The link works for 3 views, until Wed 2 Dec 2026, 10:00 UTC at the latest\. A view lasts up to 30 minutes/,
    );
    expect(words({ expire_after_n_views: 1, retain_from_created: { days: 30 } })).toMatch(
      /^The link works for 1 view, until Wed 2 Dec 2026, 10:00 UTC at the latest\./,
    );
    expect(words({ expire_after_n_views: 2, retain_from_created: { hours: 2 } })).toMatch(
      /^The link works for 2 views, until Sun 22 Nov 2026, 12:00 UTC at the latest\./,
    );
    expect(words({ retain_from_opened: { minutes: 45 } })).toBe(
      'Open it by Wed 2 Dec 2026, 10:00 UTC; from your first view it works for 45 minutes.',
    );
    expect(words({ retain_from_opened: { days: 2 }, expire_after_n_views: 3 })).toMatch(
      /^The link works for 3 views and for 2 days after your first view, and ends Wed 2 Dec 2026, 10:00 UTC at the latest\./,
    );
    // resent after its opening: its timer has become a date
    expect(words({ retain_from_opened: { hours: 1 } }, true)).toBe('The link works until Mon 23 Nov 2026, 11:00 UTC.');
  });
});

describe('who may open a link', () => {
  it("allows its own address, the listed addresses and the listed domains' addresses, in any letter case", () => {
    const list = ['ann@acme.example', '@partner.example'];
    for (const email of ['Pat@Example.com', 'ann@acme.example', 'ANN@ACME.EXAMPLE', 'bob@partner.example'])
      expect(mayOpen('pat@example.com', list, email)).toBe(true);
    // a domain is that domain exactly; an address does not stand for its domain
    for (const email of ['bob@sub.partner.example', 'bob@partner.example.evil', 'eve@acme.example', 'x@example.com'])
      expect(mayOpen('pat@example.com', list, email)).toBe(false);
    expect(mayOpen('pat@example.com', undefined, 'bob@partner.example')).toBe(false);
  });
});

describe('watermark text', () => {
  it('fills each placeholder, leaves other braces alone and drops control characters', () => {
    expect(
      watermarkText('{{email}} {{ viewed_at }} {{ip}} {{link_id}} {x}', {
        email: 'a@b.example',
        viewed_at: '2026-11-26 10:00 UTC',
        ip: '203.0.113.9',
        link_id: 'ml_1',
      }),
    ).toBe('a@b.example 2026-11-26 10:00 UTC 203.0.113.9 ml_1 {x}');
    expect(watermarkText('{{email}}', { email: 'a\u202e\nb', viewed_at: '', ip: '', link_id: '' })).toBe('a  b');
  });
});
