/**
 * What hostile-template tests need: a local listener that counts every connection made to it, a
 * secret file of the server's that no output may show, and Word documents and PDF forms built to
 * reach outside themselves.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import zlib from 'node:zlib';
import PizZip from 'pizzip';
import { PDFDocument, PDFName, PDFString, type PDFObject } from 'pdf-lib';
import { makeDocx } from './docx';
import { png } from './fixtures';
import { tempDir } from './tmp';

/** A local TCP listener (HTTP or anything else) that counts the connections made to it. */
export interface Listener {
  url: string;
  port: number;
  connections(): number;
  close(): Promise<void>;
}

/** Starts a listener on 127.0.0.1. */
export async function listener(): Promise<Listener> {
  let count = 0;
  const server = net.createServer((socket) => {
    count++;
    socket.end('HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: 0\r\n\r\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    connections: () => count,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** A file of the server's holding a secret no document may show, and a picture no document may hold. */
export interface Secret {
  text: string;
  file: string;
  picture: string;
}

/** Writes the secret files into a temporary folder removed after the test file (call it while declaring tests). */
export function secretFiles(): Secret {
  const dir = tempDir('paperlink-secret-');
  const text = `SECRET${process.pid}X${Date.now()}`;
  const file = path.join(dir, 'secret.txt');
  fs.writeFileSync(file, `${text}\n`);
  const picture = path.join(dir, 'secret.png');
  fs.writeFileSync(picture, png);
  return { text, file, picture };
}

const REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

/** A .docx made by makeDocx, with its body replaced and parts added or replaced. */
export function docxWith(o: { body?: string; files?: Record<string, string | Uint8Array> }): Uint8Array {
  const zip = new PizZip(makeDocx(['placeholder']));
  if (o.body !== undefined) {
    const doc = zip.file('word/document.xml')!.asText();
    zip.file(
      'word/document.xml',
      doc
        .replace(
          '<w:document ',
          `<w:document xmlns:r="${REL}" xmlns:v="urn:schemas-microsoft-com:vml" xmlns:o="urn:schemas-microsoft-com:office:office" `,
        )
        .replace(/<w:body>[\s\S]*?<w:sectPr>/, `<w:body>${o.body}<w:sectPr>`),
    );
  }
  for (const [name, content] of Object.entries(o.files ?? {})) zip.file(name, content);
  return zip.generate({ type: 'uint8array', compression: 'DEFLATE' });
}

/** Relationships of the document part. */
export function documentRels(...relationships: string[]): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${relationships.join('')}</Relationships>`;
}

/** A picture drawn from relationship rId9, which `link` makes an outside address (`r:link`). */
export function linkedPicture(target: string): Uint8Array {
  return docxWith({
    body: `<w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"><wp:extent cx="914400" cy="914400"/><wp:docPr id="1" name="p"/><a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:nvPicPr><pic:cNvPr id="1" name="p"/><pic:cNvPicPr/></pic:nvPicPr><pic:blipFill><a:blip r:link="rId9"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="914400" cy="914400"/></a:xfrm><a:prstGeom prst="rect"/></pic:spPr></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p><w:p><w:r><w:t>{name}</w:t></w:r></w:p>`,
    files: {
      'word/_rels/document.xml.rels': documentRels(
        `<Relationship Id="rId9" Type="${REL}/image" Target="${target}" TargetMode="External"/>`,
      ),
    },
  });
}

/** A field whose instruction is cut into runs, as Word saves them: `INCLUDE` + `PICTURE "…"`. */
export function splitField(...pieces: string[]): string {
  return `<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r>${pieces
    .map((p) => `<w:r><w:instrText xml:space="preserve">${p}</w:instrText></w:r>`)
    .join(
      '',
    )}<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>x</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>`;
}

/** A one-page PDF form with a text field `name` and an https link, plus whatever `extra` adds to it. */
export async function formWith(extra: (doc: PDFDocument) => void): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const page = doc.addPage([300, 300]);
  doc.getForm().createTextField('name').addToPage(page, { x: 10, y: 200, width: 200, height: 20 });
  extra(doc);
  return doc.save({ useObjectStreams: false });
}

/** Adds a link annotation with this action to the first page. */
export function linkAction(
  doc: PDFDocument,
  action: { [key: string]: PDFObject | string | (string | number)[] },
): void {
  const ctx = doc.context;
  const annot = ctx.register(
    ctx.obj({ Type: 'Annot', Subtype: 'Link', Rect: [10, 10, 100, 30], Border: [0, 0, 0], A: ctx.obj(action) }),
  );
  const page = doc.getPage(0);
  const annots = page.node.Annots();
  if (annots) annots.push(annot);
  else page.node.set(PDFName.of('Annots'), ctx.obj([annot]));
}

export const pdfString = (s: string) => PDFString.of(s);

/**
 * A PDF whose one object stream unpacks to `megabytes` MB (a few hundred KB on disk): pdf-lib
 * decodes object streams when it opens a file.
 */
export function objectStreamBomb(megabytes: number): Uint8Array {
  const packed = zlib.deflateSync(Buffer.alloc(megabytes * 1024 * 1024, 0x20), { level: 9 });
  const parts: Buffer[] = [];
  const offsets: number[] = [];
  let at = 0;
  const add = (b: Buffer | string) => {
    const buf = typeof b === 'string' ? Buffer.from(b, 'latin1') : b;
    parts.push(buf);
    at += buf.length;
  };
  add('%PDF-1.7\n');
  offsets[1] = at;
  add('1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n');
  offsets[2] = at;
  add('2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\n');
  offsets[3] = at;
  add(`3 0 obj\n<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode /Length ${packed.length} >>\nstream\n`);
  add(packed);
  add('\nendstream\nendobj\n');
  const xref = at;
  add('xref\n0 4\n0000000000 65535 f \n');
  for (const o of offsets.slice(1)) add(`${String(o).padStart(10, '0')} 00000 n \n`);
  add(`trailer\n<< /Size 4 /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`);
  return new Uint8Array(Buffer.concat(parts));
}

/** A PNG header that declares `width` × `height` pixels (the body is not a real image). */
export function pngDeclaring(width: number, height: number): Uint8Array {
  const b = Buffer.from(png);
  b.writeUInt32BE(width, 16);
  b.writeUInt32BE(height, 20);
  return new Uint8Array(b);
}
