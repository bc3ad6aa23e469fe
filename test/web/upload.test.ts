/**
 * The web app's template upload takes what a browser or a script may send: a file part without a
 * file name is a template like any other (it answered 500 before; issue 53).
 */
import { signInToWebApp, testService, type TestService } from '../support/service';

describe('the web app template upload', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await testService();
  });
  afterAll(() => t?.stop());

  it('stores a template whose file part has no file name', async () => {
    const signed = await signInToWebApp(t.app, t.key);
    const cookie = signed.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
    const page = await t.app.inject({ method: 'GET', url: '/app/templates', headers: { cookie } });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1];
    const boundary = 'paperlinktest';
    const body = [
      `--${boundary}\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${csrf}\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="file"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      '<document><body><p>Hello {{name}}</p></body></document>\r\n',
      `--${boundary}--\r\n`,
    ].join('');
    const before = (await t.service.templates.list({ limit: 100 })).data.length;
    const res = await t.app.inject({
      method: 'POST',
      url: '/app/templates',
      headers: { cookie, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: body,
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toContain('done=template_uploaded');
    expect((await t.service.templates.list({ limit: 100 })).data.length).toBe(before + 1);
  });
});
