/**
 * Page images of stored documents, each page drawn once: what a Magic Link without downloads shows
 * its recipient, and GET /v1/documents/:id/pages/:page. A stored document's bytes never change, so
 * a page drawn once is kept (in this process, PAGE_IMAGE_CACHE_MB at most, the least recently used
 * let go first), and a viewer's watermark is laid over the kept image instead of drawing the page
 * again (src/templates/viewcopy.ts). The stamped image is kept too: a viewer turning back and forth
 * costs nothing. Asks for an image already being made wait for it instead of making it again.
 */
import { pageImages } from '../metrics';
import { sha256 } from '../secrets';
import type { Renderer } from '../templates/pool';
import type { PageImage, Stamp } from '../templates/viewcopy';

type Kept = PageImage | Uint8Array;

const sizeOf = (kept: Kept) => (kept instanceof Uint8Array ? kept : kept.png).byteLength;
const NO_PDF = new Uint8Array(0);

export class PageImages {
  /** In the order they were last used: the first is let go first. */
  private readonly kept = new Map<string, Kept>();
  private keptBytes = 0;
  private readonly making = new Map<string, Promise<Kept>>();

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
    const { drawn } = await this.renderer.view(await this.pdf(documentId), { page });
    pageImages.inc({ how: 'drawn' });
    return drawn!;
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

  /** What is kept under `key`, now the most recently used. */
  private take(key: string): Kept | undefined {
    const kept = this.kept.get(key);
    if (kept === undefined) return undefined;
    this.kept.delete(key);
    this.kept.set(key, kept);
    return kept;
  }

  private keep(key: string, value: Kept): void {
    const size = sizeOf(value);
    if (size > this.maxBytes) return;
    for (const [oldest, old] of this.kept) {
      if (this.keptBytes + size <= this.maxBytes) break;
      this.kept.delete(oldest);
      this.keptBytes -= sizeOf(old);
    }
    this.kept.set(key, value);
    this.keptBytes += size;
  }
}
