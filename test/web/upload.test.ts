/**
 * The web app's template upload and generate form, as a browser posts them: a file part without a
 * file name is a template like any other (it answered 500 before; issue 53); a file that is no
 * template is refused once, as what it is; the form marks each merge field required or optional,
 * and an optional one left empty takes its default (issue 47); it offers the PDF standards the
 * template's format can meet (issue 50). Its fields are labelled in words, required ones first, one
 * line unless the value is likely long, and it shows social sign-in even before it is set up (issue 69).
 */
import fs from 'node:fs';
import path from 'node:path';
import { PDF_STANDARDS } from '../../src/templates/standards';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { root } from '../support/fixtures';
import { readPdf } from '../support/pdf';
import { webSession, testService, type TestService } from '../support/service';

const postcardSample = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;

describe('the web app template upload and generate form', () => {
  let t: TestService;
  let cookie: string;
  beforeAll(async () => {
    t = await testService();
    cookie = await webSession(t.app, t.key);
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
    const control = (name: string) => new RegExp(`<(input|textarea)[^>]*name="var:${name}"[^>]*>`).exec(form)?.[0];
    expect(control('address_line_1')).toContain(' required');
    expect(control('city')).toBeDefined();
    expect(control('city')).not.toContain(' required');
    expect(form).toMatch(/<label for="f-var_city">City \(optional\)<\/label/);

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

  it('labels merge fields in words, puts the required ones first, and gives long values a textarea', async () => {
    const letter = await t.service.templates.create({
      source: [
        '<document name="Readable letter" size="a5"><body>',
        '<p>{{greeting | default: "Hello"}} {{recipient_name}}</p>',
        '<p>{{notes | default: ""}}</p><p>{{client_address}}</p><p>{{invoiceTotal}}</p>',
        '<each var="line_items" as="line"><p>{{line.description}}</p></each>',
        '</body></document>',
      ].join(''),
    });
    const form = (await pageOf(`/app/generate?template_id=${letter.id}`)).body;
    const merge = /<h2>Merge fields<\/h2>([\s\S]*?)<\/div>\s*<div class="card">/.exec(form)![1];
    // each variable's control, in document order: element, name, whether required
    const controls = [...merge.matchAll(/<(input|textarea)\b[^>]*\bname="var:([^"]+)"[^>]*>/g)].map((m) => ({
      element: m[1],
      name: m[2],
      required: / required\b/.test(m[0]),
    }));
    const names = controls.map((c) => c.name);
    expect([...names].sort()).toEqual(
      ['client_address', 'greeting', 'invoiceTotal', 'line_items', 'notes', 'recipient_name'].sort(),
    );
    // the required ones first, each group in the template's own order
    const firstOptional = controls.findIndex((c) => !c.required);
    expect(firstOptional).toBeGreaterThan(0);
    expect(controls.slice(firstOptional).every((c) => !c.required)).toBe(true);
    expect(names).toEqual(['recipient_name', 'client_address', 'invoiceTotal', 'line_items', 'greeting', 'notes']);

    const labelOf = (name: string) => new RegExp(`<label for="f-var_${name}">([^<]*)</label`).exec(merge)?.[1];
    expect(labelOf('recipient_name')).toBe('Recipient name');
    expect(labelOf('invoiceTotal')).toBe('Invoice total');
    expect(labelOf('greeting')).toMatch(/^Greeting\b/);
    // the name as the template writes it stays visible, in the field's hint
    const hintOf = (name: string) =>
      new RegExp(`<div class="hint" id="f-var_${name}-hint">([^<]*)</div>`).exec(merge)?.[1];
    expect(hintOf('recipient_name')).toContain('recipient_name');
    expect(merge).toMatch(/id="f-var_recipient_name"[^>]*aria-describedby="f-var_recipient_name-hint"/);

    const element = (name: string) => controls.find((c) => c.name === name)?.element;
    expect(element('recipient_name')).toBe('input');
    expect(merge).toMatch(/<input\s[^>]*name="var:recipient_name"[^>]*type="text"/);
    expect(element('invoiceTotal')).toBe('input');
    expect(element('greeting')).toBe('input');
    expect(element('client_address')).toBe('textarea');
    expect(element('notes')).toBe('textarea');
    // a list for <each> is JSON of several lines, and its hint says so
    expect(element('line_items')).toBe('textarea');
    expect(hintOf('line_items')).toContain('JSON');
  });

  it('offers social sign-in even before it is set up, saying where to set it up', async () => {
    const radioOf = (body: string, value: string) =>
      new RegExp(`<input\\s[^>]*name="auth_type"[^>]*value="${value}"[^>]*>`).exec(body)?.[0];
    const describedBy = (tag: string) => /aria-describedby="([^"]+)"/.exec(tag)?.[1];
    const elementById = (body: string, id: string) =>
      new RegExp(`<div[^>]*id="${id}"[^>]*>([\\s\\S]*?)</div>`).exec(body)?.[1];

    // social sign-in is not set up (the test service's Magic Link app is not): the Generate and Share forms both show it
    const stored = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { 'x-service-api-token': t.key },
      payload: {
        template_id: EXAMPLE_IDS.postcard,
        merge_parameters: postcardSample,
        destinations: { inkit_storage: { name: 'Postcard to share' } },
      },
    });
    expect(stored.statusCode).toBe(201);
    for (const url of [
      `/app/generate?template_id=${EXAMPLE_IDS.postcard}`,
      `/app/documents/${stored.json().document_id}`,
    ]) {
      const body = (await pageOf(url)).body;
      const email = radioOf(body, 'email')!;
      expect(email).toContain(' checked');
      const social = radioOf(body, 'social');
      expect(social).toBeDefined();
      expect(social).toMatch(/ disabled\b/);
      expect(social).not.toContain(' checked');
      const note = elementById(body, describedBy(social!)!);
      expect(note).toMatch(/<a href="\/app\/settings#magic-link-app">/);
    }

    // with a provider and Social allowed, it can be chosen and the note is gone
    const before = await t.service.apps.magicLink.get();
    await t.service.apps.magicLink.put({
      auth_types: ['email', 'social'],
      oidc_providers: [
        {
          id: 'example',
          name: 'Example ID',
          issuer: 'https://id.example.com',
          client_id: 'paperlink',
          client_secret: 's',
        },
      ],
    });
    try {
      const body = (await pageOf(`/app/generate?template_id=${EXAMPLE_IDS.postcard}`)).body;
      const social = radioOf(body, 'social')!;
      expect(social).not.toMatch(/ disabled\b/);
      expect(describedBy(social)).toBeUndefined();
      expect(body).not.toContain('href="/app/settings#magic-link-app"');
    } finally {
      // back as it was: the settings as they were, or none (then the kept copy is forgotten too)
      if (before) {
        await t.service.apps.magicLink.put({ auth_types: before.auth_types, oidc_providers: before.oidc_providers });
      } else {
        await t.service.database.db.deleteFrom('settings').where('key', '=', 'app:magic_link').execute();
        t.service.apps.magicLink.serverUrl = t.service.apps.magicLink.serverUrl;
      }
    }
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

  it('the editor saves from the version it showed: a version saved by someone else since is a conflict, and the typed text stays', async () => {
    const made = await t.service.templates.create({ source: '<document><body><p>One {{name}}</p></body></document>' });
    const editor = await pageOf(`/app/templates/${made.id}/edit`);
    expect(editor.body).toContain('name="base_version" value="1"');
    // someone else saves version 2 meanwhile
    await t.service.templates.addVersion(made.id, { source: '<document><body><p>Two {{name}}</p></body></document>' });
    const save = (base: string, words: string) => {
      const boundary = 'paperlinkeditor';
      const field = (name: string, value: string) =>
        `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
      return t.app.inject({
        method: 'POST',
        url: `/app/templates/${made.id}/versions`,
        headers: { cookie, 'content-type': `multipart/form-data; boundary=${boundary}` },
        payload:
          field('_csrf', csrfOf(editor.body)) +
          field('base_version', base) +
          field('source', `<document><body><p>${words} {{name}}</p></body></document>`) +
          `--${boundary}--\r\n`,
      });
    };
    const refused = await save('1', 'Mine');
    expect(refused.statusCode).toBe(409);
    expect(refused.body).toContain('Mine {{name}}');
    expect((await t.service.templates.get(made.id)).version).toBe(2);
    // the page it came back with is from version 2: saving from there puts the change after it
    expect(refused.body).toContain('name="base_version" value="2"');
    const saved = await save('2', 'Mine');
    expect(saved.statusCode).toBe(303);
    expect((await t.service.templates.get(made.id)).version).toBe(3);
  });
});
