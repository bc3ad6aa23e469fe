/**
 * Page images of stored documents, each page drawn once: what a Magic Link without downloads shows
 * its recipient, and GET /v1/documents/:id/pages/:page. A stored document's bytes never change, so
 * a page drawn once is kept (in this process, PAGE_IMAGE_CACHE_MB at most, the least recently used
 * let go first), and a viewer's watermark is laid over the kept image instead of drawing the page
 * again (src/templates/viewcopy.ts). The stamped image is kept too: a viewer turning back and forth
 * costs nothing. Asks for an image already being made wait for it instead of making it again, and
 * at most DRAWS_AT_ONCE pages are drawn at once (each holds its document while it is).
 */
import { pageImages } from '../metrics';
import { sha256 } from '../secrets';
import type { Renderer } from '../templates/pool';
import { Slots } from '../templates/slots';
import type { PageImage, Stamp } from '../templates/viewcopy';

type Kept = PageImage | Uint8Array;

const sizeOf = (kept: Kept) => (kept instanceof Uint8Array ? kept : kept.png).byteLength;
const NO_PDF = new Uint8Array(0);

/** Pages being drawn at once, their documents read: more asks wait before reading theirs (each holds a whole PDF). */
export const DRAWS_AT_ONCE = 4;

export class PageImages {
  /**
   * Pages as drawn, and images with a viewer's stamp, each in the order they were last used. When
   * room is needed the stamped ones go first, oldest first: a page costs a draw to make again, a
   * stamped image only its stamp.
   */
  private readonly pages = new Map<string, Kept>();
  private readonly stamped = new Map<string, Kept>();
  private keptBytes = 0;
  private readonly making = new Map<string, Promise<Kept>>();
  private readonly drawing = new Slots(() => DRAWS_AT_ONCE);

  constructor(
    private readonly renderer: Renderer,
    /** The stored document's bytes: read only when a page of it has to be drawn. */
    private readonly pdf: (documentId: string) => Promise<Uint8Array>,
    private readonly maxBytes: number,
  ) {}

  /** Bytes of images kept now. */
  get bytes(): number {
    return this.keptBytes;
  }

  /** The page (from 1) as a PNG, with the stamp laid over it when given; a page past the last is not_found. */
  async image(documentId: string, page: number, stamp?: Stamp): Promise<Uint8Array> {
    const pageKey = `${documentId}:${page}`;
    if (!stamp) return ((await this.once(pageKey, () => this.draw(documentId, page))) as PageImage).png;
    return (await this.once(`${pageKey}:${sha256(JSON.stringify(stamp))}`, async () => {
      let drew = false;
      const drawing = () => {
        drew = true;
        return this.draw(documentId, page);
      };
      const drawn = (await this.once(pageKey, drawing, false)) as PageImage;
      const { bytes } = await this.renderer.view(NO_PDF, { page, stamp, drawn });
      // drawn for this ask (counted as drawn), or a page drawn before with this viewer's stamp over it
      if (!drew) pageImages.inc({ how: 'stamped' });
      return bytes;
    })) as Uint8Array;
  }

  private async draw(documentId: string, page: number): Promise<PageImage> {
    await this.drawing.take();
    try {
      const { drawn } = await this.renderer.view(await this.pdf(documentId), { page });
      pageImages.inc({ how: 'drawn' });
      return drawn!;
    } finally {
      this.drawing.release();
    }
  }

  /** Lets go of a document's images (it was deleted). */
  forget(documentId: string): void {
    for (const kept of [this.pages, this.stamped])
      for (const [key, value] of kept)
        if (key.startsWith(`${documentId}:`)) {
          kept.delete(key);
          this.keptBytes -= sizeOf(value);
        }
  }

  /** What is kept under `key`, or what `make` makes (once, however many ask meanwhile), kept. */
  private once(key: string, make: () => Promise<Kept>, count = true): Promise<Kept> {
    const kept = this.take(key);
    if (kept !== undefined) {
      if (count) pageImages.inc({ how: 'kept' });
      return Promise.resolve(kept);
    }
    const under = this.making.get(key);
    if (under) {
      if (count) pageImages.inc({ how: 'kept' });
      return under;
    }
    const made = make()
      .then((value) => {
        this.keep(key, value);
        return value;
      })
      .finally(() => this.making.delete(key));
    this.making.set(key, made);
    return made;
  }

  /** The map a key's image is kept in: a stamped image's key has a third part, the stamp's hash. */
  private mapOf(key: string): Map<string, Kept> {
    return key.split(':').length > 2 ? this.stamped : this.pages;
  }

  /** What is kept under `key`, now the most recently used. */
  private take(key: string): Kept | undefined {
    const map = this.mapOf(key);
    const kept = map.get(key);
    if (kept === undefined) return undefined;
    map.delete(key);
    map.set(key, kept);
    return kept;
  }

  private keep(key: string, value: Kept): void {
    const size = sizeOf(value);
    if (size > this.maxBytes || this.take(key) !== undefined) return;
    for (const map of [this.stamped, this.pages])
      for (const [oldest, old] of map) {
        if (this.keptBytes + size <= this.maxBytes) break;
        map.delete(oldest);
        this.keptBytes -= sizeOf(old);
      }
    this.mapOf(key).set(key, value);
    this.keptBytes += size;
  }
}
