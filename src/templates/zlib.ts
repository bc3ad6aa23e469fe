/**
 * pdf-lib compresses every stream (page contents, font subsets, images) with pako, zlib written in
 * JavaScript. Node's own zlib writes the same format (RFC 1950, same default level) several times
 * faster, so pdf-lib's pako gets Node's deflate. pdf-lib looks `deflate` up on pako's module object
 * at every call; pdf-lib and pako are pinned to exact versions for that, and the PDF tests read
 * every stream back.
 */
import path from 'node:path';
import zlib from 'node:zlib';

const pdfLibDir = path.dirname(require.resolve('pdf-lib/package.json'));
// eslint-disable-next-line @typescript-eslint/no-require-imports
const pako = require(require.resolve('pako', { paths: [pdfLibDir] })) as { deflate: (data: Uint8Array, options?: { level?: number }) => Uint8Array };

let installed = false;
const compressed = new WeakMap<Uint8Array, Uint8Array>();

/**
 * Marks bytes that are kept and embedded again (a font subset): the first time pdf-lib deflates
 * them, the result is kept with them, and later documents get it without compressing again.
 */
export function deflateOnce(bytes: Uint8Array): Uint8Array {
  compressed.set(bytes, undefined as unknown as Uint8Array);
  return bytes;
}


/** Makes pdf-lib deflate with Node's zlib. Idempotent. */
export function useNodeZlib(): void {
  if (installed) return;
  installed = true;
  pako.deflate = (data, options) => {
    const known = compressed.get(data);
    if (known) return known;
    const out = zlib.deflateSync(data, { level: options?.level ?? zlib.constants.Z_DEFAULT_COMPRESSION });
    if (compressed.has(data)) compressed.set(data, out);
    return out;
  };
}
