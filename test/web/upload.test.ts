/**
 * The web app's template upload and generate form, as a browser posts them: a file part without a
 * file name is a template like any other (it answered 500 before; issue 53); a file that is no
 * template is refused once, as what it is; the form marks each merge field required or optional,
 * and an optional one left empty takes its default (issue 47); it offers the PDF standards the
 * template's format can meet (issue 50).
 */
import fs from 'node:fs';
import path from 'node:path';
import { PDF_STANDARDS } from '../../src/templates/standards';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { root } from '../support/fixtures';
import { readPdf } from '../support/pdf';
import { signInToWebApp, testService, type TestService } from '../support/service';

const postcardSample = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;

describe('the web app template upload and generate form', () => {
  let t: TestService;
  let cookie: string;
  beforeAll(async () => {
    t = await testService();
    const signed = await signInToWebApp(t.app, t.key);
    cookie = signed.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
  });
  afterAll(() => t?.stop());

  const pageOf = (url: string) => t.app.inject({ method: 'GET', url, headers: { cookie } });
  const csrfOf = (body: string) => /name="_csrf" value="([^"]+)"/.exec(body)![1];
  async function upload(content: string, filename?: string) {
    const csrf = csrfOf((await pageOf('/app/templates')).body);
    const boundary = 'paperlinktest';
    const name = filename === undefined ? '' : `; filename="${filename}"`;
    const body = [
      `--${boundary}\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${csrf}\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="file"${name}\r\nContent-Type: application/octet-stream\r\n\r\n`,
      `${content}\r\n`,
      `--${boundary}--\r\n`,
    ].join('');
    return t.app.inject({
      method: 'POST',
      url: '/app/templates',
      headers: { cookie, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: body,
    });
  }
  const count = async () => (await t.service.templates.list({ limit: 100 })).data.length;

  it('stores a template whose file part has no file name', async () => {
    const before = await count();
    const res = await upload('<document><body><p>Hello {{name}}</p></body></document>');
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toContain('done=template_uploaded');
    expect(await count()).toBe(before + 1);
  });

  it('refuses a file that is no template once, without calling it broken XML', async () => {
    const before = await count();
    const res = await upload('{"name": "not a template"}', 'data.json');
    expect(res.statusCode).toBe(422);
    const notices = res.body.match(/<div class="notice error" role="alert">[\s\S]*?<\/div>/g) ?? [];
    expect(notices).toHaveLength(1);
    // one message, no list repeating it
    expect(notices[0]).not.toContain('<li>');
    expect(await count()).toBe(before);
    // the API says the same: the whole file (no line and column: it is not XML that broke)
    const api = await t.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: { 'x-service-api-token': t.key, 'content-type': 'application/json' },
      payload: { source: '{"name": "not a template"}' },
    });
    expect(api.statusCode).toBe(422);
    expect(api.json().error.code).toBe('template_invalid');
    expect(api.json().error.details.map((d: { field: string }) => d.field)).toEqual(['template']);
    // a broken XML template is named by its line, once
    const broken = await upload('<document><body><p>Hello</body></document>', 'broken.xml');
    expect(broken.statusCode).toBe(422);
    const brokenNotice = broken.body.match(/<div class="notice error" role="alert">[\s\S]*?<\/div>/g)!;
    expect(brokenNotice).toHaveLength(1);
    expect(brokenNotice[0]).not.toContain('<li>');
  });

  it('marks the required merge fields, says what an optional one reads when empty, and lets it be empty', async () => {
    const form = (await pageOf(`/app/generate?template_id=${EXAMPLE_IDS.postcard}`)).body;
    const control = (name: string) => new RegExp(`<textarea[^>]*name="var:${name}"[^>]*>`).exec(form)?.[0];
    expect(control('address_line_1')).toContain(' required');
    expect(control('city')).toBeDefined();
    expect(control('city')).not.toContain(' required');
    expect(form).toMatch(/<label for="f-var_city">city \(optional\)<\/label/);

    const greeting = await t.service.templates.create({
      source:
        '<document name="Greeting" size="a5"><body><p>{{salutation | default: "Welcome"}}, {{name}}!</p></body></document>',
    });
    const page = (await pageOf(`/app/generate?template_id=${greeting.id}`)).body;
    expect(page).toContain('Welcome');
    const generate = (vars: Record<string, string>) =>
      t.app.inject({
        method: 'POST',
        url: '/app/generate',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({
          _csrf: csrfOf(page),
          template_id: greeting.id,
          store: 'on',
          ...vars,
        }).toString(),
      });
    const res = await generate({ 'var:salutation': '', 'var:name': 'Ann' });
    expect(res.statusCode).toBe(303);
    const documentId = /\/app\/documents\/([^?]+)/.exec(res.headers.location as string)![1];
    const pdf = await t.app.inject({
      method: 'GET',
      url: `/v1/documents/${documentId}/pdf`,
      headers: { 'x-service-api-token': t.key },
    });
    expect((await readPdf(pdf.rawPayload)).text).toContain('Welcome, Ann!');
    // a required field left empty is named, not printed blank
    const empty = await generate({ 'var:name': '' });
    expect(empty.statusCode).toBe(422);
    expect(empty.body).toMatch(/id="f-var_name"[^>]*aria-invalid="true"/);
  });

  it('offers the PDF standards the template can meet, and makes the document to the one chosen', async () => {
    const standardsOf = (body: string) =>
      [
        ...(/<select id="f-pdf_standard"[^>]*>([\s\S]*?)<\/select/.exec(body)?.[1] ?? '').matchAll(/value="([^"]*)"/g),
      ].map((m) => m[1]);
    const xml = (await pageOf(`/app/generate?template_id=${EXAMPLE_IDS.postcard}`)).body;
    expect(standardsOf(xml)).toEqual(['', ...PDF_STANDARDS]);
    expect(standardsOf((await pageOf(`/app/generate?template_id=${EXAMPLE_IDS.letter_html}`)).body)).toEqual([
      '',
      'PDF/A-2b',
      'PDF/A-3b',
    ]);
    const res = await t.app.inject({
      method: 'POST',
      url: '/app/generate',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        _csrf: csrfOf(xml),
        template_id: EXAMPLE_IDS.postcard,
        store: 'on',
        pdf_standard: 'PDF/A-2b+PDF/UA-1',
        ...Object.fromEntries(Object.entries(postcardSample).map(([k, v]) => [`var:${k}`, v])),
      }).toString(),
    });
    expect(res.statusCode).toBe(303);
    const documentId = /\/app\/documents\/([^?]+)/.exec(res.headers.location as string)![1];
    const pdf = await t.app.inject({
      method: 'GET',
      url: `/v1/documents/${documentId}/pdf`,
      headers: { 'x-service-api-token': t.key },
    });
    const xmp = pdf.rawPayload.toString('latin1');
    expect(xmp).toContain('<pdfaid:part>2</pdfaid:part>');
    expect(xmp).toContain('<pdfuaid:part>1</pdfuaid:part>');
  });
});
