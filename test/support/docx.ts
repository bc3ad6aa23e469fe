/** Small Word documents made in memory for tests: paragraphs of text (with merge fields) on a page size. */
import PizZip from 'pizzip';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export type Block = string | { table: string[][] } | { pageBreak: true };

/** A .docx whose body is these paragraphs, tables and page breaks, on a page of `width` × `height` points (A5 unless told). */
export function makeDocx(
  blocks: Block[],
  o: { width?: number; height?: number; title?: string; keywords?: string; margin?: number } = {},
): Uint8Array {
  const p = (text: string) => `<w:p><w:r><w:t xml:space="preserve">${esc(text)}</w:t></w:r></w:p>`;
  const body = blocks
    .map((b) =>
      typeof b === 'string'
        ? p(b)
        : 'pageBreak' in b
          ? '<w:p><w:r><w:br w:type="page"/></w:r></w:p>'
          : `<w:tbl><w:tblPr><w:tblW w:w="0" w:type="auto"/></w:tblPr>${b.table
              .map((row) => `<w:tr>${row.map((c) => `<w:tc>${p(c)}</w:tc>`).join('')}</w:tr>`)
              .join('')}</w:tbl>`,
    )
    .join('');
  const zip = new PizZip();
  zip.file(
    '[Content_Types].xml',
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/><Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/></Types>',
  );
  zip.file(
    '_rels/.rels',
    '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/></Relationships>',
  );
  zip.file(
    'docProps/core.xml',
    `<?xml version="1.0" encoding="UTF-8"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">${o.title ? `<dc:title>${esc(o.title)}</dc:title>` : ''}${o.keywords ? `<cp:keywords>${esc(o.keywords)}</cp:keywords>` : ''}</cp:coreProperties>`,
  );
  const twips = (pt: number) => Math.round(pt * 20);
  zip.file(
    'word/document.xml',
    `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}<w:sectPr><w:pgSz w:w="${twips(o.width ?? 419.55)}" w:h="${twips(o.height ?? 595.3)}"/><w:pgMar w:top="${twips(o.margin ?? 36)}" w:right="${twips(o.margin ?? 36)}" w:bottom="${twips(o.margin ?? 36)}" w:left="${twips(o.margin ?? 36)}"/></w:sectPr></w:body></w:document>`,
  );
  return zip.generate({ type: 'uint8array' });
}
