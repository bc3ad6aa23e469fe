/**
 * The PNG encoder of page images (src/templates/png.ts): what it writes decodes, in a browser's
 * decoder as in ours, to exactly the pixels it was given.
 */
import { createCanvas, loadImage } from '@napi-rs/canvas';
import { encodePng } from '../../src/templates/png';

describe('encodePng', () => {
  it('writes a PNG that decodes to the very pixels it was given', async () => {
    const width = 301;
    const height = 97;
    const pixels = new Uint8Array(width * height * 4);
    // every value in every channel, opaque (a page image is)
    for (let i = 0; i < pixels.length; i += 4) {
      pixels[i] = (i * 7) % 256;
      pixels[i + 1] = (i >> 3) % 256;
      pixels[i + 2] = (i * 13 + 5) % 256;
      pixels[i + 3] = 255;
    }
    const png = encodePng(pixels, width, height);
    expect(Buffer.from(png).subarray(1, 4).toString()).toBe('PNG');
    const image = await loadImage(Buffer.from(png));
    expect([image.width, image.height]).toEqual([width, height]);
    const canvas = createCanvas(width, height);
    canvas.getContext('2d').drawImage(image, 0, 0);
    expect(Buffer.from(canvas.data()).equals(Buffer.from(pixels))).toBe(true);
  });
});
