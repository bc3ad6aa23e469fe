/** Small inputs shared by the template tests: images and fonts read from the examples and the font package. */
import fs from 'node:fs';
import path from 'node:path';
import { PDFDocument } from 'pdf-lib';
import { loadTemplateFile, renderTemplate } from '../../src/templates';
import { readPdf } from './pdf';

export const root = path.resolve(__dirname, '..', '..');
export const png = fs.readFileSync(path.join(root, 'examples/letter/logo.png'));
export const jpeg = fs.readFileSync(path.join(root, 'examples/postcard/front.jpg'));
export const pngDataUri = `data:image/png;base64,${png.toString('base64')}`;
export const jpegDataUri = `data:image/jpeg;base64,${jpeg.toString('base64')}`;
export const dejavu = (file: string) =>
  fs.readFileSync(path.join(path.dirname(require.resolve('dejavu-fonts-ttf/package.json')), 'ttf', file));

/** A TrueType font without Armenian, Georgian or symbols (Liberation Sans, shipped with pdfjs-dist), for fallback tests. */
export const liberationSans = fs.readFileSync(
  path.join(path.dirname(require.resolve('pdfjs-dist/package.json')), 'standard_fonts', 'LiberationSans-Regular.ttf'),
);

/** A fillable PDF form with two text fields, member_name and member_number. */
export async function fillableForm(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const page = doc.addPage([612, 792]);
  const form = doc.getForm();
  form.createTextField('member_name').addToPage(page, { x: 50, y: 700, width: 300, height: 24 });
  form.createTextField('member_number').addToPage(page, { x: 50, y: 650, width: 300, height: 24 });
  return doc.save();
}

/** An example of examples/ (a folder) loaded, rendered with its sample.json, and read back. */
export async function renderExample(folder: string) {
  const t = await loadTemplateFile(path.join(root, 'examples', folder));
  const values = JSON.parse(fs.readFileSync(path.join(root, 'examples', folder, 'sample.json'), 'utf8')) as Record<
    string,
    string
  >;
  const bytes = await renderTemplate(t, values);
  return { t, values, bytes, pdf: await readPdf(bytes) };
}
