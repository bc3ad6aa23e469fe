/** Draws laid-out pages with pdf-lib. Fonts are embedded as subsets, each face and image once per document. */
import { PDFDocument, PDFFont, PDFImage, rgb } from 'pdf-lib';
import { embeddingFontkit, type FontFace } from './fonts';
import type { ImageAsset } from './images';
import type { PageLayout } from './layout';

export interface DocumentInfo {
  title?: string;
  author?: string;
  subject?: string;
  /** Creation and modification date written into the PDF. */
  now: Date;
}

export async function drawPages(pages: PageLayout[], info: DocumentInfo): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.registerFontkit(embeddingFontkit);
  const fonts = new Map<FontFace, PDFFont>();
  const images = new Map<ImageAsset, PDFImage>();
  const font = async (face: FontFace) => {
    let f = fonts.get(face);
    if (!f) {
      f = await doc.embedFont(face.bytes, { subset: true });
      fonts.set(face, f);
    }
    return f;
  };
  const image = async (asset: ImageAsset) => {
    let i = images.get(asset);
    if (!i) {
      i = asset.type === 'png' ? await doc.embedPng(asset.bytes) : await doc.embedJpg(asset.bytes);
      images.set(asset, i);
    }
    return i;
  };

  for (const layout of pages) {
    const page = doc.addPage([layout.width, layout.height]);
    const H = layout.height;
    for (const op of layout.ops) {
      switch (op.kind) {
        case 'text':
          page.drawText(op.text, {
            x: op.x,
            y: H - op.y,
            size: op.size,
            font: await font(op.face),
            color: rgb(op.color.r, op.color.g, op.color.b),
            ...(op.invisible ? { opacity: 0 } : {}),
          });
          break;
        case 'line':
          page.drawLine({ start: { x: op.x1, y: H - op.y1 }, end: { x: op.x2, y: H - op.y2 }, thickness: op.thickness, color: rgb(op.color.r, op.color.g, op.color.b) });
          break;
        case 'rect':
          page.drawRectangle({
            x: op.x,
            y: H - op.y - op.height,
            width: op.width,
            height: op.height,
            ...(op.fill ? { color: rgb(op.fill.r, op.fill.g, op.fill.b) } : {}),
            ...(op.border && op.borderWidth > 0 ? { borderColor: rgb(op.border.r, op.border.g, op.border.b), borderWidth: op.borderWidth } : { borderWidth: 0 }),
          });
          break;
        case 'image':
          page.drawImage(await image(op.image), { x: op.x, y: H - op.y - op.height, width: op.width, height: op.height });
          break;
      }
    }
  }
  if (info.title) doc.setTitle(info.title);
  if (info.author) doc.setAuthor(info.author);
  if (info.subject) doc.setSubject(info.subject);
  doc.setCreator('Paperlink');
  doc.setProducer('Paperlink (pdf-lib)');
  doc.setCreationDate(info.now);
  doc.setModificationDate(info.now);
  return doc.save();
}
