/** Draws laid-out pages with pdf-lib. Fonts are embedded as subsets, each face and image once per document. */
import { PDFDict, PDFDocument, PDFName, PDFNumber, PDFObjectCopier, PDFRef, PDFString } from 'pdf-lib';
import { DocumentFonts } from './embed';
import type { FontFace } from './fonts';
import { imageSource, type ImageAsset } from './images';
import type { PageLayout } from './layout';
import type { StructElem, Tag } from './model';
import { release } from './release';
import { finishDocument, type Attachment, type Conformance } from './standards';
import { useNodeZlib } from './zlib';

useNodeZlib();

export interface DocumentInfo {
  title?: string;
  author?: string;
  subject?: string;
  /** The document's language (the catalog's /Lang). */
  lang?: string;
  keywords?: string;
  /** Writes the structure tree the ops' tags describe (a tagged PDF); untagged otherwise. */
  tagged?: boolean;
  /** The PDF/A level and PDF/UA the document claims (standards.ts); none by default. */
  standard?: Conformance;
  /** Files embedded in the document. */
  attachments?: Attachment[];
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

/**
 * A page's content stream written as text, one operator a line. pdf-lib's operators are objects
 * (a PDFNumber for every coordinate, an array for every line of words) that its writer turns into
 * the same text again: for running text, most of the time of drawing a page.
 */
class Content {
  text = '';
  line(op: string): void {
    this.text += `${op}\n`;
  }
}

/** A number as a PDF writes it: to a thousandth, never with an exponent (a page is far under 10^21). */
function num(x: number): string {
  const r = Math.round(x * 1000) / 1000;
  return r === 0 ? '0' : String(r);
}

/** A colour's operands, made once per colour object (a style's colour is one object for all its words). */
const colors = new WeakMap<object, string>();
function colorOf(c: { r: number; g: number; b: number }): string {
  let known = colors.get(c);
  if (known === undefined) {
    known = `${num(c.r)} ${num(c.g)} ${num(c.b)}`;
    colors.set(c, known);
  }
  return known;
}

/** `make` with its last answer kept: made again only for another argument. */
function lastOf<K, V>(make: (key: K) => V): (key: K) => V {
  let last: { key: K; value: V } | undefined;
  return (key) => {
    if (!last || last.key !== key) last = { key, value: make(key) };
    return last.value;
  };
}

async function draw(doc: PDFDocument, pages: PageLayout[], info: DocumentInfo): Promise<Uint8Array> {
  const images = new Map<ImageAsset, PDFRef>();
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

  // every face's subset goes into the document before any text is drawn (embed.ts)
  const fonts = new DocumentFonts();
  for (const layout of pages) for (const op of layout.ops) if (op.kind === 'text') fonts.add(op.face, op.text);
  await fonts.embed(doc);
  const structure = info.tagged ? new Structure() : undefined;
  for (const layout of pages) {
    const page = doc.addPage([layout.width, layout.height]);
    const marks = structure?.page(page.ref);
    const H = layout.height;
    const fontKeys = new Map<FontFace, string>();
    // the page's content stream, written as text (see Content)
    const out = new Content();
    // consecutive text ops share one text object: the font, size and colour are set when they change,
    // and the words of a line are one TJ (show text with adjustments): the line is placed once, each
    // gap between words is a number (pdf-lib's drawText would wrap every word in its own text object
    // and add a font resource per call)
    let text:
      { font?: FontFace; size?: number; color?: string; invisible: boolean; y?: number; endX?: number } | undefined;
    let shown = '';
    // an op's colour object is most often the last op's, and the gaps of a justified line one number
    const colorText = lastOf(colorOf);
    const gapText = lastOf((gap: number) => ` ${num(-gap)} `);
    const show = () => {
      if (shown) out.line(`[${shown}] TJ`);
      shown = '';
    };
    const endText = () => {
      show();
      if (text) out.line('ET Q');
      text = undefined;
    };
    // the tag whose marked-content sequence is open: text objects (BT…ET) nest inside it
    let open: Tag | undefined;
    const enter = (tag: Tag) => {
      if (tag === open) return;
      endText();
      if (open !== undefined) out.line('EMC');
      open = tag;
      out.line(tag === 'artifact' ? '/Artifact BMC' : `/${tag.role} <</MCID ${marks!.content(tag)}>> BDC`);
    };
    for (const op of layout.ops) {
      if (marks) enter(op.tag ?? 'artifact');
      if (op.kind !== 'text') endText();
      switch (op.kind) {
        case 'text': {
          const f = op.face;
          const hidden = Boolean(op.invisible);
          if (text && text.invisible !== hidden) endText();
          if (!text) {
            // invisible text (an image's alt text) in text rendering mode 3, neither filled nor stroked
            out.line(hidden ? 'q BT 3 Tr' : 'q BT');
            text = { invisible: hidden };
          }
          const color = colorText(op.color);
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
            if (gap !== 0) shown += gapText(gap);
          } else {
            show();
            if (text.font !== f || text.size !== op.size) {
              let key = fontKeys.get(f);
              if (!key) {
                key = page.node.newFontDictionary(f.font.postscriptName || 'Font', fonts.ref(f)).asString();
                fontKeys.set(f, key);
              }
              out.line(`${key} ${num(op.size)} Tf`);
              text.font = f;
              text.size = op.size;
            }
            if (text.color !== color) {
              out.line(`${color} rg`);
              text.color = color;
            }
            out.line(`1 0 0 1 ${num(op.x)} ${num(H - op.y)} Tm`);
            text.y = op.y;
          }
          shown += fonts.codes(f, op.text);
          text.endX = op.x + op.width;
          break;
        }
        case 'line':
          out.line(
            `q ${colorOf(op.color)} RG ${num(op.thickness)} w ${num(op.x1)} ${num(H - op.y1)} m ${num(op.x2)} ${num(H - op.y2)} l S Q`,
          );
          break;
        case 'rect': {
          const stroke = op.border && op.borderWidth > 0;
          if (!op.fill && !stroke) break;
          out.line(
            `q ${op.fill ? `${colorOf(op.fill)} rg ` : ''}${stroke ? `${colorOf(op.border!)} RG ${num(op.borderWidth)} w ` : ''}${num(op.x)} ${num(H - op.y - op.height)} ${num(op.width)} ${num(op.height)} re ${op.fill ? (stroke ? 'B' : 'f') : 'S'} Q`,
          );
          break;
        }
        case 'image': {
          const name = page.node.newXObject('Image', await image(op.image)).asString();
          out.line(
            `q ${num(op.width)} 0 0 ${num(op.height)} ${num(op.x)} ${num(H - op.y - op.height)} cm ${name} Do Q`,
          );
          break;
        }
      }
    }
    endText();
    if (open !== undefined) out.line('EMC');
    // as bytes: pdf-lib would convert the text a character at a time
    page.node.set(
      PDFName.of('Contents'),
      doc.context.register(doc.context.flateStream(Buffer.from(out.text, 'latin1'))),
    );
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
  if (info.keywords) doc.setKeywords([info.keywords]);
  doc.setCreator('Paperlink');
  doc.setProducer('Paperlink (pdf-lib)');
  doc.setCreationDate(info.now);
  doc.setModificationDate(info.now);
  await finishDocument(doc, {
    standard: info.standard,
    props: info.standard ? { lang: info.lang ?? 'en' } : undefined,
    attachments: info.attachments,
    now: info.now,
  });
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
