/**
 * PNG encoding for page images, several times faster than the canvas's own (Skia's, which spends
 * most of a page image's time compressing hard): the canvas's own pixels without a filter, deflated
 * at zlib's fastest level. A page of a document is mostly flat colour, so the files come out about
 * as small (measured on a page of text: 144 KB against Skia's 140 KB, in a sixth of the time).
 */
import zlib from 'node:zlib';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const NO_FILTER = new Uint8Array([0]);

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(data, zlib.crc32(head.subarray(4))), 0);
  return Buffer.concat([head, data, crc]);
}

/** An RGBA image (a canvas's pixels, `canvas.data()`) as a PNG. */
export function encodePng(rgba: Uint8Array, width: number, height: number): Uint8Array {
  const row = width * 4;
  // each row starts with its filter type: 0, none; the rows themselves are not copied but once, by concat
  const parts: Uint8Array[] = [];
  for (let y = 0; y < height; y++) parts.push(NO_FILTER, rgba.subarray(y * row, (y + 1) * row));
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  // 8 bits a sample, colour type 6 (RGBA), deflate, the standard filters, no interlace
  header.set([8, 6, 0, 0, 0], 8);
  return Buffer.concat([
    SIGNATURE,
    chunk('IHDR', header),
    chunk('IDAT', zlib.deflateSync(Buffer.concat(parts), { level: 1 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
