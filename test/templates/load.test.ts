import { TemplateError, UnsupportedCharacterError } from '../../src/errors';
import { loadTemplate, loadTemplateFile } from '../../src/templates';
import { MAX_NESTING } from '../../src/templates/xml';
import { png } from '../support/fixtures';

async function rejection(source: string | Uint8Array, assets?: Record<string, Uint8Array>): Promise<TemplateError> {
  const err = await loadTemplate(source, { assets: async (p) => assets?.[p] }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TemplateError);
  return err as TemplateError;
}

describe('loadTemplate() rejects', () => {
  it('XML that is not well-formed, saying the line and column', async () => {
    const err = await rejection('<document>\n  <body>\n    <p>unclosed\n  </body>\n</document>');
    expect(err.code).toBe('template_invalid');
    expect(err.location?.line).toBe(4);
    expect(err.location?.column).toBeGreaterThan(0);
  });

  it('an unknown element, at its line and column', async () => {
    const err = await rejection('<document>\n<body>\n  <p>ok</p>\n  <blink>no</blink>\n</body>\n</document>');
    expect(err.location).toEqual({ line: 4, column: 3 });
    expect(err.message).toContain('blink');
  });

  it('an unknown attribute, naming it', async () => {
    const err = await rejection('<document><body>\n<p colour="red">x</p></body></document>');
    expect(err.location?.line).toBe(2);
    expect(err.message).toContain('colour');
  });

  it.each([
    ['a bad page size', '<document size="huge"><body/></document>'],
    ['a bad colour', '<document><body><p color="blue-ish">x</p></body></document>'],
    ['a bad length', '<document margin="wide"><body/></document>'],
    ['a negative font size', '<document><body><p font-size="-3">x</p></body></document>'],
    ['an unknown font', '<document><body><p font="Comic Sans">x</p></body></document>'],
    ['text outside a paragraph', '<document><body>loose text</body></document>'],
    ['a merge field that is never closed', '<document><body><p>Hi {{name</p></body></document>'],
    ['a malformed merge field', '<document><body><p>{{first name}}</p></body></document>'],
    ['page numbers outside a header or footer', '<document><body><p>{{page}}</p></body></document>'],
    ['a merge field in a layout attribute', '<document><body><p font-size="{{size}}">x</p></body></document>'],
    ['a table without columns', '<document><body><table><tr><td>x</td></tr></table></body></document>'],
    [
      'a row with too many cells',
      '<document><body><table><col/><tr><td>a</td><td>b</td></tr></table></body></document>',
    ],
    ['an <if> without a variable', '<document><body><if><p>x</p></if></body></document>'],
    ['a document without a body', '<document></document>'],
    // (an <html> root is an HTML template: test/templates/html.test.ts)
    ['another root element', '<page><body/></page>'],
    ['an unknown entity', '<document><body><p>&nbsp;</p></body></document>'],
    ['a bare ampersand', '<document><body><p>Fish & Chips</p></body></document>'],
  ])('%s', async (_what, xml) => {
    const err = await rejection(xml);
    expect(err.code).toBe('template_invalid');
  });

  it('an entity expansion bomb (billion laughs), without expanding it', async () => {
    const bomb = `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<document><body><p>&lol9;</p></body></document>`;
    const err = await rejection(bomb);
    expect(err.location?.line).toBe(2);
    expect(err.message).toMatch(/DOCTYPE/);
  });

  it('an external entity that would read a file', async () => {
    const err = await rejection(
      '<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]><document><body><p>&x;</p></body></document>',
    );
    expect(err.message).not.toContain('root:');
  });

  it('absurd nesting, without overflowing the stack', async () => {
    const depth = 100_000;
    const xml = `<document><body>${'<if var="a">'.repeat(depth)}<p>x</p>${'</if>'.repeat(depth)}</body></document>`;
    const err = await rejection(xml);
    expect(err.message).toContain(String(MAX_NESTING));
  });

  it('a 50 MB file, before parsing it', async () => {
    const big = `<document><body><p>${'a'.repeat(50 * 1024 * 1024)}</p></body></document>`;
    const err = await rejection(big);
    expect(err.message).toMatch(/larger than/);
  });

  it('an asset that is not shipped with the template', async () => {
    const err = await rejection('<document><body>\n<image src="missing.png"/></body></document>');
    expect(err.location?.line).toBe(2);
    expect(err.message).toContain('missing.png');
  });

  it.each(['../secret.png', '/etc/passwd', 'https://example.com/logo.png', 'file:///etc/hosts', 'a/../../b.png'])(
    'an asset path that leaves the template folder: %s',
    async (src) => {
      const err = await rejection(`<document><body><image src="${src}"/></body></document>`, {
        [src]: new Uint8Array(png),
      });
      expect(err.code).toBe('template_invalid');
    },
  );

  it('an image that is neither PNG nor JPEG, or is damaged', async () => {
    await rejection('<document><body><image src="data:image/png;base64,aGVsbG8gd29ybGQ="/></body></document>');
    const broken = Buffer.from(png);
    broken.fill(0, 40, 400);
    await rejection('<document><body><image src="x.png"/></body></document>', { 'x.png': new Uint8Array(broken) });
  });

  it('a font file that is not a font', async () => {
    const err = await rejection('<document><fonts><font family="Brand" src="f.ttf"/></fonts><body/></document>', {
      'f.ttf': new TextEncoder().encode('not a font'),
    });
    expect(err.message).toContain('f.ttf');
  });

  it('template text with a character no font can draw, saying where', async () => {
    const err = await loadTemplate('<document><body>\n<p>漢字</p></body></document>').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedCharacterError);
    expect((err as UnsupportedCharacterError).variable).toBeUndefined();
    expect((err as Error).message).toContain('line 2');
  });

  it('bytes that are neither a PDF nor UTF-8 text', async () => {
    await rejection(new Uint8Array([0xff, 0xfe, 0x00, 0x80, 0x81, 0xc3]));
  });

  it('a template file that does not exist', async () => {
    await expect(loadTemplateFile('/no/such/template.xml')).rejects.toMatchObject({ code: 'template_invalid' });
  });
});

describe('loadTemplate() accepts', () => {
  it('numeric character references and the five XML entities', async () => {
    const t = await loadTemplate('<document><body><p>&lt;&amp;&gt;&quot;&apos; &#233;&#x41;</p></body></document>');
    expect(t.kind).toBe('xml');
  });

  it('a byte order mark and an XML declaration', async () => {
    const t = await loadTemplate(
      new TextEncoder().encode(
        '\uFEFF<?xml version="1.0" encoding="UTF-8"?>\n<document><body><p>x</p></body></document>',
      ),
    );
    expect(t.kind).toBe('xml');
  });
});
