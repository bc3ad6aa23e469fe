/** Draws laid-out pages with pdf-lib. Fonts are embedded as subsets, each face and image once per document. */
import {
  beginText,
  degrees,
  drawImage,
  endText as endTextOp,
  PDFDict,
  PDFDocument,
  PDFFont,
  PDFName,
  PDFNumber,
  PDFHexString,
  PDFObjectCopier,
  PDFOperator,
  PDFOperatorNames,
  PDFRef,
  PDFString,
  popGraphicsState,
  pushGraphicsState,
  rgb,
  setFillingRgbColor,
  setFontAndSize,
  setGraphicsState,
  setTextMatrix,
} from 'pdf-lib';
import { embeddingFontkit, LAYOUT_FEATURES, type FontFace } from './fonts';
import { imageSource, type ImageAsset } from './images';
import type { PageLayout, StructElem, Tag } from './layout';
import { release } from './release';
import { prepareSubset } from './subsets';
import { useNodeZlib } from './zlib';

useNodeZlib();

export interface DocumentInfo {
  title?: string;
  author?: string;
  subject?: string;
  /** The document's language (the catalog's /Lang). */
  lang?: string;
  /** Writes the structure tree the ops' tags describe (a tagged PDF); untagged otherwise. */
  tagged?: boolean;
  /** Creation and modification date written into the PDF. */
  now: Date;
}

export async function drawPages(pages: PageLayout[], info: DocumentInfo): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  try {
    return await draw(doc, pages, info);
  } finally {
    release(doc);
  }
}

async function draw(doc: PDFDocument, pages: PageLayout[], info: DocumentInfo): Promise<Uint8Array> {
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
  const structure = info.tagged ? new Structure() : undefined;
  for (const layout of pages) {
    const page = doc.addPage([layout.width, layout.height]);
    const marks = structure?.page(page.ref);
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
    // the tag whose marked-content sequence is open: text objects (BT…ET) nest inside it
    let open: Tag | undefined;
    const enter = (tag: Tag) => {
      if (tag === open) return;
      endText();
      if (open !== undefined) page.pushOperators(PDFOperator.of(PDFOperatorNames.EndMarkedContent));
      open = tag;
      page.pushOperators(
        tag === 'artifact'
          ? PDFOperator.of(PDFOperatorNames.BeginMarkedContent, [PDFName.of('Artifact')])
          : PDFOperator.of(PDFOperatorNames.BeginMarkedContentSequence, [
              PDFName.of(tag.role),
              // an inline property list: pdf-lib's types leave dictionaries out, its writer takes them
              doc.context.obj({ MCID: marks!.content(tag) }) as unknown as PDFName,
            ]),
      );
    };
    for (const op of layout.ops) {
      if (marks) enter(op.tag ?? 'artifact');
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
    if (open !== undefined) page.pushOperators(PDFOperator.of(PDFOperatorNames.EndMarkedContent));
  }
  if (structure) {
    structure.write(doc);
    doc.setLanguage(info.lang ?? 'en');
    // a viewer shows the title, not the file name (PDF/UA)
    if (info.title) doc.catalog.getOrCreateViewerPreferences().setDisplayDocTitle(true);
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

/**
 * A tagged PDF's structure tree (ISO 32000 14.7): the elements the ops name, each with its marked
 * content on the pages (MCIDs), under one Document element in the order first met, which is the
 * order the template laid them out; a parent tree maps each page's MCIDs back to their elements.
 */
class Structure {
  private readonly roots: StructElem[] = [];
  private readonly kids = new Map<StructElem, (StructElem | { page: PDFRef; mcid: number })[]>();
  private readonly pages: { ref: PDFRef; owners: StructElem[] }[] = [];

  /** A page's marked content: `content(elem)` gives the MCID of a new sequence of `elem` on it. */
  page(ref: PDFRef): { content(elem: StructElem): number } {
    const owners: StructElem[] = [];
    this.pages.push({ ref, owners });
    return {
      content: (elem) => {
        this.attach(elem);
        this.kids.get(elem)!.push({ page: ref, mcid: owners.length });
        owners.push(elem);
        return owners.length - 1;
      },
    };
  }

  private attach(elem: StructElem): void {
    if (this.kids.has(elem)) return;
    this.kids.set(elem, []);
    if (!elem.parent) this.roots.push(elem);
    else {
      this.attach(elem.parent);
      this.kids.get(elem.parent)!.push(elem);
    }
  }

  write(doc: PDFDocument): void {
    const ctx = doc.context;
    const rootRef = ctx.nextRef();
    const documentRef = ctx.nextRef();
    const refs = new Map<StructElem, PDFRef>();
    for (const elem of this.kids.keys()) refs.set(elem, ctx.nextRef());
    for (const [elem, kids] of this.kids) {
      ctx.assign(
        refs.get(elem)!,
        ctx.obj({
          Type: 'StructElem',
          S: elem.role,
          P: elem.parent ? refs.get(elem.parent)! : documentRef,
          K: kids.map((k) => ('mcid' in k ? ctx.obj({ Type: 'MCR', Pg: k.page, MCID: k.mcid }) : refs.get(k)!)),
          ...(elem.alt ? { Alt: PDFString.of(elem.alt) } : {}),
          ...(elem.role === 'TH' ? { A: ctx.obj({ O: 'Table', Scope: 'Column' }) } : {}),
        }),
      );
    }
    ctx.assign(
      documentRef,
      ctx.obj({ Type: 'StructElem', S: 'Document', P: rootRef, K: this.roots.map((e) => refs.get(e)!) }),
    );
    const nums: (PDFNumber | ReturnType<typeof ctx.obj>)[] = [];
    this.pages.forEach(({ ref, owners }, i) => {
      doc.context.lookup(ref, PDFDict).set(PDFName.of('StructParents'), PDFNumber.of(i));
      nums.push(PDFNumber.of(i), ctx.obj(owners.map((e) => refs.get(e)!)));
    });
    ctx.assign(
      rootRef,
      ctx.obj({
        Type: 'StructTreeRoot',
        K: documentRef,
        ParentTree: ctx.obj({ Nums: nums }),
        ParentTreeNextKey: this.pages.length,
      }),
    );
    doc.catalog.set(PDFName.of('StructTreeRoot'), rootRef);
    doc.catalog.set(PDFName.of('MarkInfo'), ctx.obj({ Marked: true }));
  }
}
