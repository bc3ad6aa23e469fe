/** Images for templates (XML templates draw PNG and JPEG): read from a data URI or an asset, checked once at load. */
import { PDFDocument, type PDFContext, type PDFRef } from 'pdf-lib';
import { checkLimit } from './limits';

export interface ImageAsset {
  type: 'png' | 'jpeg';
  bytes: Uint8Array;
  /** Natural size in pixels; drawn at 72 dpi (1 px = 1 pt) unless the template gives a size. */
  width: number;
  height: number;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function isPng(b: Uint8Array): boolean {
  return b.length > 24 && PNG_SIGNATURE.every((v, i) => b[i] === v);
}

function isJpeg(b: Uint8Array): boolean {
  return b.length > 4 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff;
}

function jpegSize(b: Uint8Array): { width: number; height: number } | undefined {
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return undefined;
    const marker = b[i + 1];
    const len = (b[i + 2] << 8) | b[i + 3];
    // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: (b[i + 5] << 8) | b[i + 6], width: (b[i + 7] << 8) | b[i + 8] };
    }
    i += 2 + len;
  }
  return undefined;
}

/** Decodes a `data:image/png;base64,...` URI. Returns undefined when the text is not a base64 data URI. */
export function decodeDataUri(uri: string): Uint8Array | undefined {
  const m = /^data:([a-z]+\/[a-z0-9.+-]+)?(;[a-z-]+=[^;,]*)*;base64,([\s\S]*)$/i.exec(uri.trim());
  if (!m) return undefined;
  return new Uint8Array(Buffer.from(m[3].replace(/\s+/g, ''), 'base64'));
}

/** The pixel size a PNG, JPEG, GIF or WebP header declares, without decoding it; undefined for other bytes. */
export function imageSize(bytes: Uint8Array): { width: number; height: number } | undefined {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (isPng(bytes)) return { width: v.getUint32(16), height: v.getUint32(20) };
  if (isJpeg(bytes)) return jpegSize(bytes);
  const ascii = (from: number, to: number) => Buffer.from(bytes.subarray(from, to)).toString('latin1');
  if (bytes.length >= 10 && ascii(0, 4) === 'GIF8')
    return { width: v.getUint16(6, true), height: v.getUint16(8, true) };
  if (bytes.length >= 30 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') {
    const chunk = ascii(12, 16);
    const u24 = (at: number) => bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16);
    if (chunk === 'VP8X') return { width: u24(24) + 1, height: u24(27) + 1 };
    if (chunk === 'VP8L') {
      const bits = v.getUint32(21, true);
      return { width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 };
    }
    if (chunk === 'VP8 ') return { width: v.getUint16(26, true) & 0x3fff, height: v.getUint16(28, true) & 0x3fff };
  }
  return undefined;
}

const DATA_IMAGE = /data:image\/[a-z0-9.+-]+;base64,([A-Za-z0-9+/=\s]+)/gi;

/**
 * Refuses, before a browser or LibreOffice decodes it, an image over RENDER_MAX_IMAGE_PIXELS:
 * each of `files` (by name) and each base64 data URI in `text` (a page, a style sheet).
 */
export function checkImagePixels(files: Iterable<[string, Uint8Array]>, text = ''): void {
  const check = (bytes: Uint8Array, what: string) => {
    const size = imageSize(bytes);
    if (size) checkLimit('imagePixels', size.width * size.height, `${what} (${size.width} × ${size.height} pixels)`);
  };
  for (const [name, bytes] of files) check(bytes, `Image "${name}"`);
  for (const m of text.matchAll(DATA_IMAGE))
    check(new Uint8Array(Buffer.from(m[1], 'base64')), 'An image in a data URI');
}

/**
 * Identifies and checks an image. Throws an Error saying what is wrong; the caller adds where.
 * The image is embedded once into a scratch document so a corrupt file fails here, at load,
 * not at the first render.
 */
export async function readImage(bytes: Uint8Array): Promise<ImageAsset> {
  let type: ImageAsset['type'];
  let size: { width: number; height: number } | undefined;
  if (isPng(bytes)) {
    type = 'png';
    const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    size = { width: v.getUint32(16), height: v.getUint32(20) };
  } else if (isJpeg(bytes)) {
    type = 'jpeg';
    size = jpegSize(bytes);
  } else {
    throw new Error('is neither a PNG nor a JPEG image');
  }
  if (!size || size.width <= 0 || size.height <= 0)
    throw new Error(`is a ${type.toUpperCase()} file whose size cannot be read`);
  let source: { context: PDFContext; ref: PDFRef };
  try {
    const scratch = await PDFDocument.create();
    const image = type === 'png' ? await scratch.embedPng(bytes) : await scratch.embedJpg(bytes);
    await image.embed();
    source = { context: scratch.context, ref: image.ref };
  } catch (err) {
    throw new Error(`is a damaged ${type.toUpperCase()} file (${err instanceof Error ? err.message : String(err)})`);
  }
  const asset: ImageAsset = { type, bytes, width: size.width, height: size.height };
  sources.set(asset, source);
  return asset;
}

/**
 * An image as a PDF XObject (with its soft mask), decoded and compressed once, when it was read,
 * in a scratch document: documents copy it from there (a copy of bytes, not a re-encode).
 */
const sources = new WeakMap<ImageAsset, { context: PDFContext; ref: PDFRef }>();

export function imageSource(asset: ImageAsset): { context: PDFContext; ref: PDFRef } {
  const source = sources.get(asset);
  if (!source) throw new Error('this image was not read with readImage');
  return source;
}
