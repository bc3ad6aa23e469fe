/** Draws laid-out pages with pdf-lib. Fonts are embedded as subsets, each face and image once per document. */
import {
  beginText,
  degrees,
  drawImage,
  endText as endTextOp,
  PDFDocument,
  PDFFont,
  PDFName,
  PDFHexString,
  PDFObjectCopier,
  PDFOperator,
  PDFOperatorNames,
  PDFRef,
  popGraphicsState,
  pushGraphicsState,
  rgb,
  setFillingRgbColor,
  setFontAndSize,
  setGraphicsState,
  setTextMatrix,
  showText,
} from 'pdf-lib';
import { embeddingFontkit, LAYOUT_FEATURES, type FontFace } from './fonts';
import { imageSource, type ImageAsset } from './images';
import type { PageLayout } from './layout';
import { prepareSubset } from './subsets';
import { useNodeZlib } from './zlib';

useNodeZlib();

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
  const images = new Map<ImageAsset, PDFRef>();
  const font = async (face: FontFace) => {
    let f = fonts.get(face);
    if (!f) {
      f = await doc.embedFont(face.bytes, { subset: true, features: LAYOUT_FEATURES });
      fonts.set(face, f);
    }
    return f;
  };
  const image = async (asset: ImageAsset) => {
    let ref = images.get(asset);
    if (!ref) {
      const source = imageSource(asset);
      ref = doc.context.register(
        PDFObjectCopier.for(source.context, doc.context).copy(source.context.lookup(source.ref)!),
      );
      images.set(asset, ref);
    }
    return ref;
  };

  // a word's glyphs as the document's font subset numbers them: the same text, the same string
  const encoded = new Map<PDFFont, Map<string, PDFHexString>>();
  const encode = (f: PDFFont, t: string) => {
    let known = encoded.get(f);
    if (!known) {
      known = new Map();
      encoded.set(f, known);
    }
    let hex = known.get(t);
    if (!hex) {
      hex = f.encodeText(t);
      known.set(t, hex);
    }
    return hex;
  };
  // every face's glyphs go into its subset before any text is drawn, in glyph order (subsets.ts)
  const textsOf = new Map<FontFace, Set<string>>();
  for (const layout of pages) {
    for (const op of layout.ops) {
      if (op.kind !== 'text') continue;
      let texts = textsOf.get(op.face);
      if (!texts) {
        texts = new Set();
        textsOf.set(op.face, texts);
      }
      texts.add(op.text);
    }
  }
  for (const [face, texts] of textsOf) prepareSubset(face, await font(face), texts);
  // invisible text (an image's alt text) is drawn with fill opacity 0, through one graphics state
  let invisible: PDFRef | undefined;
  for (const layout of pages) {
    const page = doc.addPage([layout.width, layout.height]);
    const H = layout.height;
    const fontKeys = new Map<PDFFont, PDFName>();
    // consecutive text ops share one text object: the font, size and colour are set when they change,
    // and the words of a line are one TJ (show text with adjustments): the line is placed once, each
    // gap between words is a number (pdf-lib's drawText would wrap every word in its own text object
    // and add a font resource per call)
    let text:
      { font?: PDFFont; size?: number; color?: string; invisible: boolean; y?: number; endX?: number } | undefined;
    let shown: (PDFHexString | number)[] = [];
    const show = () => {
      if (shown.length) page.pushOperators(PDFOperator.of(PDFOperatorNames.ShowTextAdjusted, [doc.context.obj(shown)]));
      shown = [];
    };
    const endText = () => {
      show();
      if (text) page.pushOperators(endTextOp(), popGraphicsState());
      text = undefined;
    };
    for (const op of layout.ops) {
      if (op.kind !== 'text') endText();
      switch (op.kind) {
        case 'text': {
          const f = await font(op.face);
          const hidden = Boolean(op.invisible);
          if (text && text.invisible !== hidden) endText();
          if (!text) {
            page.pushOperators(pushGraphicsState());
            if (hidden) {
              invisible ??= doc.context.register(doc.context.obj({ Type: 'ExtGState', ca: 0 }));
              page.pushOperators(setGraphicsState(page.node.newExtGState('GS', invisible)));
            }
            page.pushOperators(beginText());
            text = { invisible: hidden };
          }
          const color = `${op.color.r} ${op.color.g} ${op.color.b}`;
          const sameLine =
            text.font === f &&
            text.size === op.size &&
            text.color === color &&
            text.y === op.y &&
            text.endX !== undefined &&
            op.x >= text.endX - 0.01;
          if (sameLine) {
            // in thousandths of the font size, to a tenth: the line ends where the layout put it
            const gap = Math.round(((op.x - text.endX!) * 10_000) / op.size) / 10;
            if (gap !== 0) shown.push(-gap);
          } else {
            show();
            if (text.font !== f || text.size !== op.size) {
              let key = fontKeys.get(f);
              if (!key) {
                key = page.node.newFontDictionary(f.name, f.ref);
                fontKeys.set(f, key);
              }
              page.pushOperators(setFontAndSize(key, op.size));
              text.font = f;
              text.size = op.size;
            }
            if (text.color !== color) {
              page.pushOperators(setFillingRgbColor(op.color.r, op.color.g, op.color.b));
              text.color = color;
            }
            page.pushOperators(setTextMatrix(1, 0, 0, 1, op.x, H - op.y));
            text.y = op.y;
          }
          shown.push(encode(f, op.text));
          text.endX = op.x + op.width;
          break;
        }
        case 'line':
          page.drawLine({
            start: { x: op.x1, y: H - op.y1 },
            end: { x: op.x2, y: H - op.y2 },
            thickness: op.thickness,
            color: rgb(op.color.r, op.color.g, op.color.b),
          });
          break;
        case 'rect':
          page.drawRectangle({
            x: op.x,
            y: H - op.y - op.height,
            width: op.width,
            height: op.height,
            ...(op.fill ? { color: rgb(op.fill.r, op.fill.g, op.fill.b) } : {}),
            ...(op.border && op.borderWidth > 0
              ? { borderColor: rgb(op.border.r, op.border.g, op.border.b), borderWidth: op.borderWidth }
              : { borderWidth: 0 }),
          });
          break;
        case 'image': {
          const name = page.node.newXObject('Image', await image(op.image));
          page.pushOperators(
            ...drawImage(name, {
              x: op.x,
              y: H - op.y - op.height,
              width: op.width,
              height: op.height,
              rotate: degrees(0),
              xSkew: degrees(0),
              ySkew: degrees(0),
            }),
          );
          break;
        }
      }
    }
    endText();
  }
  if (info.title) doc.setTitle(info.title);
  if (info.author) doc.setAuthor(info.author);
  if (info.subject) doc.setSubject(info.subject);
  doc.setCreator('Paperlink');
  doc.setProducer('Paperlink (pdf-lib)');
  doc.setCreationDate(info.now);
  doc.setModificationDate(info.now);
  // pdf-lib yields to the event loop every 50 objects by default; a render runs on a render thread, where yielding only adds latency
  return doc.save({ objectsPerTick: Infinity });
}
