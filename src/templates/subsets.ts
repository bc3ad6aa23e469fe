/**
 * Font subsets made once per glyph set. A document embeds, for each face it uses, a subset of the
 * font holding only its glyphs; making that subset (fontkit re-encoding the glyph, metric and
 * location tables) and compressing it was most of a letter's render time. Two documents that use
 * the same glyphs of a face get the same subset, provided the glyphs are numbered the same way, so:
 *
 * - before a document draws any text, every glyph it will need is put into its subset in glyph-id
 *   order (not in the order the text first uses them), which makes the subset a function of the
 *   glyph set alone;
 * - the subset's bytes are kept per face and glyph set (a bounded number per face), and the next
 *   document with that set takes them, compressed once; once compressed, only the compressed bytes
 *   are kept (see zlib.ts).
 *
 * The ToUnicode map (which characters each glyph stands for) is still made per document from the
 * document's own glyphs. This relies on pdf-lib's CustomFontSubsetEmbedder and fontkit's TTFSubset
 * (`subset`, `glyphs`, `glyphIdMap`, `glyphCache`, `serializeFont`, `includeGlyph`): pdf-lib and
 * fontkit are pinned to exact versions, and test/templates/pool.test.ts checks the text layer of
 * documents rendered one after another and at once.
 */
import type { PDFFont } from 'pdf-lib';
import type { Glyph } from 'pdf-lib/cjs/types/fontkit';
import type { FontFace } from './fonts';
import { LAYOUT_FEATURES } from './fonts';
import { compressedOnly, deflateOnce } from './zlib';

interface SubsetEmbedder {
  font: { layout(text: string, features?: unknown): { glyphs: Glyph[] } };
  subset: { includeGlyph(glyph: Glyph | number): number };
  glyphs: Glyph[];
  glyphIdMap: Map<number, number>;
  glyphCache: { invalidate(): void };
  serializeFont(): Promise<Uint8Array>;
}

/** Subsets kept per face; the oldest goes first. */
const MAX_SUBSETS_PER_FACE = 256;
const subsets = new WeakMap<FontFace, Map<string, Promise<Uint8Array>>>();

/**
 * Puts every glyph of `texts` into the document font's subset, in glyph-id order, and lets the
 * subset's bytes come from (or go into) the per-face store. Call before any text is encoded.
 */
export function prepareSubset(face: FontFace, font: PDFFont, texts: Iterable<string>): void {
  const embedder = (font as unknown as { embedder: SubsetEmbedder }).embedder;
  if (!embedder?.subset || typeof embedder.serializeFont !== 'function') return;
  const byId = new Map<number, Glyph>();
  for (const text of texts)
    for (const g of embedder.font.layout(text, LAYOUT_FEATURES).glyphs) if (!byId.has(g.id)) byId.set(g.id, g);
  const ids = [...byId.keys()].sort((a, b) => a - b);
  for (const id of ids) {
    const glyph = byId.get(id)!;
    const subsetId = embedder.subset.includeGlyph(glyph);
    embedder.glyphs[subsetId - 1] = glyph;
    embedder.glyphIdMap.set(id, subsetId);
  }
  embedder.glyphCache.invalidate();

  let store = subsets.get(face);
  if (!store) {
    store = new Map();
    subsets.set(face, store);
  }
  embedder.serializeFont = fromStore(embedder, embedder.serializeFont.bind(embedder), store, ids);
}

/**
 * The embedder's serializeFont, answered from the face's store. Made here and not as a function
 * literal assigned to `embedder.serializeFont`, which V8 allocates in the old generation (see
 * release.ts).
 */
function fromStore(
  embedder: SubsetEmbedder,
  make: () => Promise<Uint8Array>,
  store: Map<string, Promise<Uint8Array>>,
  ids: number[],
): () => Promise<Uint8Array> {
  const key = ids.join(',');
  return () => {
    // text encoded after this call would add glyphs, and the key would no longer say what the subset holds
    if ((embedder.subset as unknown as { glyphs: number[] }).glyphs.length !== new Set([0, ...ids]).size) return make();
    let bytes = store.get(key);
    if (bytes) {
      store.delete(key);
      bytes = bytes.then(compressedOnly);
    } else {
      bytes = make().then(deflateOnce);
      bytes.catch(() => store.delete(key));
    }
    store.set(key, bytes);
    if (store.size > MAX_SUBSETS_PER_FACE) store.delete(store.keys().next().value!);
    return bytes;
  };
}
