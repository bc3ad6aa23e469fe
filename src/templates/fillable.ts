/**
 * Fillable PDF templates: a PDF with AcroForm fields is a template whose variables are its field
 * names. Rendering fills the fields, redraws their appearances with an embedded Unicode font,
 * and flattens the form so the result is a plain document; scripts and actions that reach outside
 * the document are stripped from it (pdfsafe.ts).
 */
import {
  PDFCheckBox,
  PDFDocument,
  PDFDropdown,
  PDFOptionList,
  PDFRadioGroup,
  PDFTextField,
  PDFArray,
  PDFName,
  PDFRef,
  type PDFField,
} from 'pdf-lib';
import { InvalidValueError, PaperlinkError, TemplateError, UnsupportedCharacterError } from '../errors';
import { builtinSans, embeddingFontkit, FontSet, hasGlyph } from './fonts';
import { checkPageContent, checkPageTree, openUntrusted, stripActions } from './pdfsafe';
import { release } from './release';
import { finishDocument, type Attachment, type PdfMetadata } from './standards';
import { postcardOfKeywords, type PresetName } from './presets';
import { breakLines } from './text';
import { useNodeZlib } from './zlib';

useNodeZlib();

export type PdfFieldType = 'text' | 'checkbox' | 'radio' | 'dropdown' | 'list';

export interface PdfField {
  name: string;
  type: PdfFieldType;
  /** Choices of a radio group, dropdown or list. */
  options?: string[];
}

export interface PdfTemplate {
  kind: 'pdf';
  name: string;
  bytes: Uint8Array;
  fields: PdfField[];
  variables: string[];
  /** Form fields are all required: no defaults. */
  defaults: Record<string, string>;
  /** The postcard size its Keywords name (`paperlink-postcard:4x6`, presets.ts). */
  postcard?: PresetName;
}

function describe(field: PDFField): PdfField | undefined {
  const name = field.getName();
  if (field instanceof PDFTextField) return { name, type: 'text' };
  if (field instanceof PDFCheckBox) return { name, type: 'checkbox' };
  if (field instanceof PDFRadioGroup) return { name, type: 'radio', options: field.getOptions() };
  if (field instanceof PDFDropdown) return { name, type: 'dropdown', options: field.getOptions() };
  if (field instanceof PDFOptionList) return { name, type: 'list', options: field.getOptions() };
  return undefined; // buttons and signatures take no value
}

function open(bytes: Uint8Array): Promise<PDFDocument> {
  return openUntrusted(bytes, ({ encrypted, reason, cause }) =>
    encrypted
      ? new TemplateError('The PDF is encrypted. Save an unencrypted copy of the form and upload that.')
      : new TemplateError(`The PDF cannot be read: ${reason}`, undefined, { cause }),
  );
}

export async function loadPdfTemplate(bytes: Uint8Array, name = 'Untitled form'): Promise<PdfTemplate> {
  const doc = await open(bytes);
  const fields: PdfField[] = [];
  let found;
  try {
    checkPageTree(doc);
    checkPageContent(doc);
    found = doc.getForm().getFields();
  } catch (err) {
    if (err instanceof PaperlinkError) throw err;
    // a file that parses but has no document catalog or form dictionary
    throw new TemplateError(
      `The PDF cannot be read as a form: ${err instanceof Error ? err.message : String(err)}`,
      undefined,
      { cause: err },
    );
  }
  for (const f of found) {
    const d = describe(f);
    if (d && !fields.some((x) => x.name === d.name)) fields.push(d);
  }
  if (fields.length === 0) {
    throw new TemplateError(
      'The PDF has no form fields to fill. Add text fields, check boxes, radio groups or dropdowns, or write an XML template.',
    );
  }
  const title = doc.getTitle()?.trim();
  const postcard = postcardOfKeywords(doc.getKeywords());
  return {
    kind: 'pdf',
    name: title || name,
    bytes,
    fields,
    variables: fields.map((f) => f.name),
    defaults: {},
    ...(postcard && { postcard }),
  };
}

const fonts = new FontSet();
const BLACK = { r: 0, g: 0, b: 0 };

const TF = /(\/[^\s/]+\s+)(\d*\.?\d+)(\s+Tf)/;

/**
 * Gives a field that the form leaves on "auto" size the largest size up to 12 pt at which the
 * text fits its box (pdf-lib's own auto size grows short text to fill tall boxes, to 80 pt and
 * more). A size the form sets itself is kept.
 */
function fitText(field: PDFTextField, text: string): void {
  const fieldDa = field.acroField.getDefaultAppearance() ?? '/Helv 0 Tf 0 g';
  for (const widget of field.acroField.getWidgets()) {
    const da = widget.getDefaultAppearance() ?? fieldDa;
    const set = TF.exec(da);
    if (set && Number(set[2]) > 0) continue;
    const rect = widget.getRectangle();
    const width = Math.max(1, rect.width - 4);
    const height = Math.max(1, rect.height - 4);
    let size = 12;
    for (; size > 4; size -= 0.5) {
      const style = { family: 'sans', size, bold: false, italic: false, underline: false, color: BLACK };
      const lines = breakLines(
        [{ text, style, source: { variable: field.getName() } }],
        field.isMultiline() ? width : Infinity,
        fonts,
        1.2,
        style,
      );
      const fits = field.isMultiline()
        ? lines.length * size * 1.2 <= height + 1
        : (lines[0]?.width ?? 0) <= width && size * 1.2 <= height + 2;
      if (fits) break;
    }
    widget.setDefaultAppearance(set ? da.replace(TF, `$1${size}$3`) : `/Helv ${size} Tf ${da}`);
  }
}

/** The longest text a form field takes: PDF readers' limit for one string (ISO 32000-1, Annex C). */
export const MAX_FIELD_TEXT = 32_767;

const YES = ['true', 'yes', '1', 'on', 'checked', 'x'];
const NO = ['false', 'no', '0', 'off', 'unchecked', ''];

export async function renderPdfTemplate(
  t: PdfTemplate,
  values: Record<string, string>,
  now: Date,
  finish: { metadata?: PdfMetadata; attachments?: Attachment[] } = {},
): Promise<Uint8Array> {
  const doc = await open(t.bytes);
  try {
    await finishDocument(doc, { props: finish.metadata, attachments: finish.attachments, now });
    return await fill(doc, t, values, now);
  } finally {
    release(doc);
  }
}

async function fill(doc: PDFDocument, t: PdfTemplate, values: Record<string, string>, now: Date): Promise<Uint8Array> {
  doc.registerFontkit(embeddingFontkit);
  const form = doc.getForm();
  const face = builtinSans();
  for (const field of t.fields) {
    const value = values[field.name] ?? '';
    const f = form.getField(field.name);
    const bad = (msg: string): never => {
      throw new InvalidValueError(field.name, msg);
    };
    if (f instanceof PDFTextField) {
      for (const ch of value) {
        const cp = ch.codePointAt(0)!;
        if (cp >= 32 && !hasGlyph(face, cp))
          throw new UnsupportedCharacterError(ch, { variable: field.name, font: face.label });
      }
      const text = f.isMultiline() ? value.replace(/\r\n?/g, '\n') : value.replace(/\s*[\r\n]+\s*/g, ' ');
      if (text.length > MAX_FIELD_TEXT)
        bad(
          `is ${text.length} characters long; a PDF form field holds at most ${MAX_FIELD_TEXT} (PDF's own limit for a string).`,
        );
      const max = f.getMaxLength();
      if (max !== undefined && [...text].length > max)
        bad(`is ${[...text].length} characters long; the form field holds at most ${max}.`);
      f.setText(text);
      fitText(f, text);
    } else if (f instanceof PDFCheckBox) {
      const v = value.trim().toLowerCase();
      if (YES.includes(v)) f.check();
      else if (NO.includes(v)) f.uncheck();
      else
        bad(
          `is a check box: give one of ${YES.join(', ')} to tick it, or ${NO.filter(Boolean).join(', ')} or "" to leave it empty.`,
        );
    } else if (f instanceof PDFRadioGroup) {
      if (value === '') f.clear();
      else if (field.options!.includes(value)) f.select(value);
      else bad(`must be one of ${field.options!.map((o) => JSON.stringify(o)).join(', ')} (or "" for none).`);
    } else if (f instanceof PDFDropdown) {
      if (value === '') f.clear();
      else if (field.options!.includes(value) || f.isEditable()) f.select(value);
      else bad(`must be one of ${field.options!.map((o) => JSON.stringify(o)).join(', ')} (or "" for none).`);
    } else if (f instanceof PDFOptionList) {
      const picked = value
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean);
      const unknown = picked.filter((p) => !field.options!.includes(p));
      if (unknown.length)
        bad(
          `has ${unknown.map((u) => JSON.stringify(u)).join(', ')}, not among ${field.options!.map((o) => JSON.stringify(o)).join(', ')}.`,
        );
      if (picked.length > 1 && !f.isMultiselect()) bad('takes one choice only.');
      if (picked.length === 0) f.clear();
      else f.select(picked);
    }
  }
  form.updateFieldAppearances(await doc.embedFont(face.bytes, { subset: true }));
  form.flatten();
  dropDanglingAnnotations(doc);
  stripActions(doc);
  doc.setCreator('Paperlink');
  doc.setProducer('Paperlink (pdf-lib)');
  doc.setCreationDate(now);
  doc.setModificationDate(now);
  return doc.save();
}

/**
 * pdf-lib's flatten deletes the widgets but can leave them listed in a page's /Annots, which
 * readers then report as a damaged cross-reference table. Keeps only annotations that exist.
 */
function dropDanglingAnnotations(doc: PDFDocument): void {
  for (const page of doc.getPages()) {
    const annots = page.node.lookupMaybe(PDFName.of('Annots'), PDFArray);
    if (!annots) continue;
    for (let i = annots.size() - 1; i >= 0; i--) {
      const entry = annots.get(i);
      if (entry instanceof PDFRef && doc.context.lookup(entry) === undefined) annots.remove(i);
    }
    if (annots.size() === 0) page.node.delete(PDFName.of('Annots'));
  }
}
