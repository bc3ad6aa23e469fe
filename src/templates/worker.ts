/**
 * A render thread (see pool.ts): compiles each template once, the first time a task names it, and
 * renders. Errors travel back as data (code, message, details) and are revived on the other side.
 */
import os from 'node:os';
import type { MessagePort } from 'node:worker_threads';
import { errorData, PaperlinkError, type ErrorData } from '../errors';
import { workerData } from 'node:worker_threads';
import { builtinSans } from './fonts';
import { setRenderLimits, type RenderLimits } from './limits';
import { useZlibGate } from './zlib';
import { loadTemplate, renderTemplate, type RenderWarning, type Template, type TemplateOrigin } from './index';

export interface RenderTask {
  /** Names the template for this thread's cache; unique per loaded template in the sending process. */
  key: string;
  /** Sent again only when the thread said it does not know the key. */
  origin?: TemplateOrigin;
  values: Record<string, string>;
  /** Milliseconds since the epoch: the creation date written into the PDF. */
  now: number;
  /** Told when this thread takes the task up: the time budget starts then. */
  started?: MessagePort;
  /** The task's zlib gate (zlib.ts): the pool ends this thread only outside zlib. */
  gate?: Int32Array;
}

export type RenderReply =
  { pdf: Uint8Array; warnings: RenderWarning[] } | { missing: true } | { error: ErrorData } | { failure: string };

// Requests before renders: this thread runs below normal priority, so on a busy machine the HTTP
// thread (answering, committing) is served first and renders take the CPU time left. Only on
// Linux, where each thread has its own nice value (elsewhere it would lower the whole process).
if (process.platform === 'linux') {
  try {
    os.setPriority(os.constants.priority.PRIORITY_BELOW_NORMAL);
  } catch {
    // not allowed here: renders keep the normal priority
  }
}

// the work limits of the process that started this thread
setRenderLimits(((workerData ?? {}) as { limits?: RenderLimits }).limits ?? {});

// the built-in sans faces are what nearly every template uses: parsed when the thread starts,
// not in its first render
for (const [bold, italic] of [
  [false, false],
  [true, false],
  [false, true],
  [true, true],
])
  builtinSans(bold, italic);

const MAX_TEMPLATES = 64;
const compiled = new Map<string, Promise<Template>>();

function template(task: RenderTask): Promise<Template> | undefined {
  let t = compiled.get(task.key);
  if (t) {
    // most recently used last
    compiled.delete(task.key);
    compiled.set(task.key, t);
    return t;
  }
  if (!task.origin) return undefined;
  const assets = new Map(task.origin.assets);
  t = loadTemplate(task.origin.source, { assets: async (p) => assets.get(p), name: task.origin.name });
  t.catch(() => compiled.delete(task.key));
  compiled.set(task.key, t);
  if (compiled.size > MAX_TEMPLATES) compiled.delete(compiled.keys().next().value!);
  return t;
}

export default async function render(task: RenderTask): Promise<RenderReply> {
  useZlibGate(task.gate);
  task.started?.postMessage('started');
  task.started?.close();
  try {
    const t = template(task);
    if (!t) return { missing: true };
    const warnings: RenderWarning[] = [];
    const pdf = await renderTemplate(await t, task.values, { now: new Date(task.now), warnings });
    return { pdf, warnings };
  } catch (err) {
    if (err instanceof PaperlinkError) return { error: errorData(err) };
    return { failure: err instanceof Error ? (err.stack ?? err.message) : String(err) };
  }
}
