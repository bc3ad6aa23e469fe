/** The link e-mail's footer says who sent it and through what, without saying a name twice. */
import type { MagicLinkApp } from '../../src/links/app';
import { linkMessage } from '../../src/links/mail';

const app = (organization_name: string, sender_name = ''): MagicLinkApp => ({
  public_url: 'http://127.0.0.1:3000',
  public_url_follows_server: true,
  sender_name,
  sender_email: 'docs@example.com',
  organization_name,
  logo_url: null,
  accent_color: '#1F4B99',
  auth_types: ['email'],
  oidc_providers: [],
  configured_at: '2026-11-26T00:00:00Z',
});
const footerOf = (a: MagicLinkApp) =>
  linkMessage(a, { to: 'pat@example.com', documentName: 'Letter', url: 'http://x/l/t', limits: '', confirm: '' })
    .text.split('\n')
    .find((l) => l.startsWith('Sent by'));

describe('the link e-mail footer', () => {
  it('says "through Paperlink" after another organisation, and not after Paperlink itself', () => {
    expect(footerOf(app('Acme', 'Ann'))).toBe(
      'Sent by Ann at Acme through Paperlink, to pat@example.com, because Acme shared a document with this address.',
    );
    // the organisation name left at its default
    expect(footerOf(app('Paperlink'))).toBe(
      'Sent by Paperlink, to pat@example.com, because Paperlink shared a document with this address.',
    );
  });
});
