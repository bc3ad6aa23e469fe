import { ValidationError } from '../../src/errors';
import { deadlineAtCreation, deadlineAtOpening, describeLimits, parseLinkSettings } from '../../src/links/policy';

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
    const s = parse({ retain_from_created: { hours: 24 }, auth_email: 'auth@example.com', recipient_email: 'to@example.com', expire_after_n_views: 3 });
    expect(s).toEqual({ recipientEmail: 'to@example.com', authEmail: 'auth@example.com', authType: 'email', maxViews: 3, retention: { from: 'created', unit: 'hours', amount: 24 } });
    expect(parse({ recipient_email: 'to@example.com', expire_after_n_views: 1 })).toMatchObject({ authEmail: 'to@example.com', authType: 'email', retention: null });
  });

  it.each([
    ['no limit', { recipient_email: 'a@example.com' }, { magic_link: 'no_limit' }],
    ['no recipient', { expire_after_n_views: 1 }, { 'magic_link.recipient_email': 'required' }],
    ['bad e-mails', { recipient_email: 'nope', auth_email: 'a@', expire_after_n_views: 1 }, { 'magic_link.recipient_email': 'invalid_email', 'magic_link.auth_email': 'invalid_email' }],
    ['zero views', { recipient_email: 'a@example.com', expire_after_n_views: 0 }, { 'magic_link.expire_after_n_views': 'range' }],
    ['negative hours', { recipient_email: 'a@example.com', retain_from_created: { hours: -1 } }, { 'magic_link.retain_from_created.hours': 'range' }],
    ['fractional days', { recipient_email: 'a@example.com', retain_from_created: { days: 1.5 } }, { 'magic_link.retain_from_created.days': 'range' }],
    ['two units', { recipient_email: 'a@example.com', retain_from_created: { hours: 1, days: 1 } }, { 'magic_link.retain_from_created': 'one_unit' }],
    ['unknown unit', { recipient_email: 'a@example.com', retain_from_opened: { weeks: 1 } }, { 'magic_link.retain_from_opened.weeks': 'unknown_unit' }],
    ['both timers', { recipient_email: 'a@example.com', retain_from_created: { hours: 1 }, retain_from_opened: { hours: 1 } }, { 'magic_link.retain_from_opened': 'conflict' }],
    ['over 10 years', { recipient_email: 'a@example.com', retain_from_created: { days: 3700 } }, { 'magic_link.retain_from_created.days': 'range' }],
    ['bad auth type', { recipient_email: 'a@example.com', expire_after_n_views: 1, auth_type: 'sms' }, { 'magic_link.auth_type': 'invalid' }],
    ['unknown field', { recipient_email: 'a@example.com', expire_after_n_views: 1, retain: 1 }, { 'magic_link.retain': 'unknown_field' }],
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
    expect(at({ recipient_email: 'a@example.com', expire_after_n_views: 5, retain_from_created: { days: 30 } })).toBe('2026-12-02T10:00:00.000Z');
    expect(at({ recipient_email: 'a@example.com', expire_after_n_views: 5, retain_from_created: { hours: 2 } })).toBe('2026-11-22T12:00:00.000Z');
  });

  it('starts a timer from opening at the first opening, never beyond the 10-day cap', () => {
    const fromOpening = parse({ recipient_email: 'a@example.com', retain_from_opened: { hours: 2 } });
    expect(deadlineAtCreation(fromOpening, created)).toBeNull();
    expect(deadlineAtOpening(fromOpening, null, new Date('2026-11-24T08:00:00Z'))?.toISOString()).toBe('2026-11-24T10:00:00.000Z');
    const capped = parse({ recipient_email: 'a@example.com', retain_from_opened: { days: 5 }, expire_after_n_views: 2 });
    const cap = deadlineAtCreation(capped, created);
    expect(cap?.toISOString()).toBe('2026-12-02T10:00:00.000Z');
    expect(deadlineAtOpening(capped, cap, new Date('2026-11-30T10:00:00Z'))?.toISOString()).toBe('2026-12-02T10:00:00.000Z');
    expect(deadlineAtOpening(capped, cap, new Date('2026-11-23T10:00:00Z'))?.toISOString()).toBe('2026-11-28T10:00:00.000Z');
  });

  it('says the limits in words for the e-mail', () => {
    expect(describeLimits(parse({ recipient_email: 'a@example.com', retain_from_created: { hours: 1 }, expire_after_n_views: 3 }))).toBe('1 hour from now or 3 views, whichever comes first');
    expect(describeLimits(parse({ recipient_email: 'a@example.com', retain_from_opened: { days: 2 } }))).toBe('2 days from when you first open it');
  });
});
