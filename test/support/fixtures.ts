/** Small inputs shared by the template tests: images and fonts read from the examples and the font package. */
import fs from 'node:fs';
import path from 'node:path';

export const root = path.resolve(__dirname, '..', '..');
export const png = fs.readFileSync(path.join(root, 'examples/letter/logo.png'));
export const jpeg = fs.readFileSync(path.join(root, 'examples/postcard/front.jpg'));
export const pngDataUri = `data:image/png;base64,${png.toString('base64')}`;
export const jpegDataUri = `data:image/jpeg;base64,${jpeg.toString('base64')}`;
export const dejavu = (file: string) => fs.readFileSync(path.join(path.dirname(require.resolve('dejavu-fonts-ttf/package.json')), 'ttf', file));

/** A TrueType font without Armenian, Georgian or symbols (Liberation Sans, shipped with pdfjs-dist), for fallback tests. */
export const liberationSans = fs.readFileSync(path.join(path.dirname(require.resolve('pdfjs-dist/package.json')), 'standard_fonts', 'LiberationSans-Regular.ttf'));
