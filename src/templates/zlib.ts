/**
 * pdf-lib compresses every stream (page contents, font subsets, images) with pako, zlib written in
 * JavaScript. Node's own zlib writes the same format (RFC 1950, same default level) several times
 * faster, so pdf-lib's pako gets Node's deflate. pdf-lib looks `deflate` up on pako's module object
 * at every call; pdf-lib and pako are pinned to exact versions for that, and the PDF tests read
 * every stream back.
 *
 * Node's zlib and stopped threads: a worker thread ended (`worker.terminate()`) between the moment
 * `deflateSync` makes its native zlib handle and the moment it initialises it aborts the whole
 * process (Node 20 to 24: "Assertion failed: init_done_ && close before init"). Render threads are
 * ended when a render runs over its time budget, so the render pool and its threads share a gate:
 * the thread enters zlib only through it, and the pool ends a thread only once it has shut the gate
 * with the thread outside (`stopOutsideZlib`).
 */
import path from 'node:path';
import zlib from 'node:zlib';

const pdfLibDir = path.dirname(require.resolve('pdf-lib/package.json'));
// eslint-disable-next-line @typescript-eslint/no-require-imports
const pako = require(require.resolve('pako', { paths: [pdfLibDir] })) as {
  deflate: (data: Uint8Array, options?: { level?: number }) => Uint8Array;
};

let installed = false;

// the gate's one cell: open with the thread outside zlib, the thread inside, shut for good
const OPEN = 0;
const INSIDE = 1;
const SHUT = 2;

/** A gate for one render: made by the pool, passed to the thread with the task. */
export function zlibGate(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(4));
}

let gate: Int32Array | undefined;

/** The gate this thread's deflates go through from now on (a render thread sets it per task). */
export function useZlibGate(next: Int32Array | undefined): void {
  gate = next;
}

/** Runs `work` (a call into Node's zlib) through the current gate, if any. */
function throughGate<T>(work: () => T): T {
  if (!gate) return work();
  const own = gate;
  if (Atomics.compareExchange(own, 0, OPEN, INSIDE) !== OPEN) throw new Error('this render is being stopped');
  try {
    return work();
  } finally {
    Atomics.store(own, 0, OPEN);
    Atomics.notify(own, 0);
  }
}

/** Node's deflate, entered only through the current gate, if any. */
export function deflate(data: Uint8Array, level: number = zlib.constants.Z_DEFAULT_COMPRESSION): Uint8Array {
  return throughGate(() => zlib.deflateSync(data, { level }));
}

/**
 * Node's inflate of a zlib stream, through the gate, stopped past `most` bytes (undefined then: it
 * unpacks to more): a stream from outside is measured without ever holding more than that.
 */
export function inflateAtMost(data: Uint8Array, most: number): Uint8Array | undefined {
  return throughGate(() => {
    try {
      return zlib.inflateSync(data, { maxOutputLength: Math.max(1, most), finishFlush: zlib.constants.Z_SYNC_FLUSH });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') return undefined;
      throw err;
    }
  });
}

/**
 * Calls `stop` (which ends the thread) once the gate is shut with the thread outside zlib: at once
 * if it is outside, else as soon as its deflate returns. From then on the thread cannot enter zlib.
 */
export function stopOutsideZlib(own: Int32Array, stop: () => void): void {
  if (Atomics.compareExchange(own, 0, OPEN, SHUT) !== INSIDE) {
    stop();
    return;
  }
  const wait = Atomics.waitAsync(own, 0, INSIDE, 1000);
  if (wait.async) void wait.value.then(() => stopOutsideZlib(own, stop));
  else stopOutsideZlib(own, stop);
}

/** Makes pdf-lib deflate with Node's zlib. Idempotent. */
export function useNodeZlib(): void {
  if (installed) return;
  installed = true;
  pako.deflate = (data, options) => deflate(data, options?.level);
}
