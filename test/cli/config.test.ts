import { loadConfig, senderOf } from '../../src/config';

describe('MAIL_FROM', () => {
  it('is the Magic Link app’s default sender, so it must be an address the app itself would take', () => {
    expect(senderOf(loadConfig({}).mailFrom)).toEqual({
      name: 'Paperlink',
      address: 'paperlink@localhost.localdomain',
    });
    expect(senderOf(loadConfig({ MAIL_FROM: '"Acme Docs" <docs@acme.example>' }).mailFrom)).toEqual({
      name: 'Acme Docs',
      address: 'docs@acme.example',
    });
    expect(senderOf(loadConfig({ MAIL_FROM: 'docs@acme.example' }).mailFrom)).toEqual({
      name: undefined,
      address: 'docs@acme.example',
    });
    for (const wrong of ['docs@mailhost', 'Acme <docs>', 'Acme <docs@acme.example', 'docs\u202e@acme.example'])
      expect(() => loadConfig({ MAIL_FROM: wrong })).toThrow(
        expect.objectContaining({ code: 'invalid_configuration' }),
      );
  });
});
