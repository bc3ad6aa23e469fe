/**
 * A render thread (see pool.ts): compiles each template once, the first time a task names it,
 * fills it and draws it. Everything that runs a template's own code or parses an uploaded file
 * happens here, within the thread's time and memory budget: compiling an upload, filling
 * Liquid and docxtemplater fields, laying out and drawing XML templates and PDF forms, and
 * counting the pages Chromium or LibreOffice printed. Errors travel back as data (code, message,
 * details) and are revived on the other side.
 */
import os from 'node:os';
import type { MessagePort } from 'node:worker_threads';
import { errorData, PaperlinkError, type ErrorData } from '../errors';
import { workerData } from 'node:worker_threads';
import { builtinSans } from './fonts';
import type { RenderLimits } from '../config';
import { setRenderLimits } from './limits';
import type { Numbering } from './layout';
import { mergeParts, openPart, type MergeOptions, type Part } from './merge';
import type { Attachment, PdfMetadata, PdfStandard } from './standards';
import { viewCopy, type ViewCopy, type ViewOptions } from './viewcopy';
import { printReady, proof, type PrintReady, type ProofOptions } from './print';
import type { PresetName } from './presets';
import { useZlibGate } from './zlib';
import {
  fillTemplate,
  finishPrinted,
  loadTemplate,
  summaryOf,
  type Filled,
  type RenderWarning,
  type Template,
  type TemplateOrigin,
  type TemplateSummary,
} from './index';

interface TaskBase {
  /** Told when this thread takes the task up: the time budget starts then. */
  started?: MessagePort;
  /** The task's zlib gate (zlib.ts): the pool ends this thread only outside zlib. */
  gate?: Int32Array;
}

/**
 * Compile a template from its source. `origin.assets` holds the files found so far and `absent`
 * the paths known not to exist; a path the template names that is in neither comes back in
 * `wants`, for the pool to look up and ask again.
 */
export interface LoadTask extends TaskBase {
  op: 'load';
  key: string;
  origin: TemplateOrigin;
  absent: string[];
}

/** Fill a template (and draw it, for XML and PDF forms). */
export interface FillTask extends TaskBase {
  op: 'fill';
  /** Names the template for this thread's cache; unique per loaded template in the sending process. */
  key: string;
  /** Sent again only when the thread said it does not know the key. */
  origin?: TemplateOrigin;
  values: Record<string, string>;
  /** Milliseconds since the epoch: the creation date written into the PDF. */
  now: number;
  /** The time budget, for the template engine's own limit (Liquid's). */
  timeoutMs: number;
  standard?: PdfStandard;
  metadata?: PdfMetadata;
  attachments?: Attachment[];
  numbering?: Numbering;
}

/**
 * Count the pages of a printed PDF, and make an HTML template's claim the standard asked for
 * (finishPrinted); or of a PDF a client uploaded (`field` says where it came from), read with the
 * guards of merge.ts.
 */
export interface PagesTask extends TaskBase {
  op: 'pages';
  pdf: Uint8Array;
  field?: string;
  standard?: PdfStandard;
  metadata?: PdfMetadata;
  attachments?: Attachment[];
}

/** Merge rendered and uploaded PDFs into one (merge.ts). */
export interface MergeTask extends TaskBase {
  op: 'merge';
  parts: Part[];
  options: Omit<MergeOptions, 'now'> & { now: number };
}

/** What a Magic Link's recipient is shown of a stored document (viewcopy.ts). */
export interface ViewTask extends TaskBase {
  op: 'view';
  pdf: Uint8Array;
  options: ViewOptions;
}

/** A rendered postcard checked and marked for print, or drawn as a proof (print.ts). */
export interface PrintTask extends TaskBase {
  op: 'print';
  pdf: Uint8Array;
  size?: PresetName;
}

export interface ProofTask extends TaskBase {
  op: 'proof';
  pdf: Uint8Array;
  options: ProofOptions;
}

export type RenderTask = LoadTask | FillTask | PagesTask | MergeTask | ViewTask | PrintTask | ProofTask;

export type RenderReply =
  | { loaded: TemplateSummary }
  | { wants: string[] }
  | { filled: Filled; warnings: RenderWarning[] }
  | { pages: number; pdf: Uint8Array }
  | { merged: Uint8Array; count: number }
  | { view: ViewCopy }
  | { printed: PrintReady }
  | { proof: Uint8Array }
  | { missing: true }
  | { error: ErrorData }
  | { failure: string };

// Requests before renders: this thread runs below normal priority, so on a busy machine the HTTP
// thread (answering, committing) is served first and renders take the CPU time left. Only on
// Linux, where each thread has its own nice value (elsewhere it would lower the whole process).
if (process.platform === 'linux') {
  try {
    // the thread of recipients' page images (pool.ts) below renders too
    const lowest = ((workerData ?? {}) as { lowest?: boolean }).lowest;
    os.setPriority(lowest ? os.constants.priority.PRIORITY_LOW : os.constants.priority.PRIORITY_BELOW_NORMAL);
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

function remember(key: string, template: Promise<Template>): void {
  template.catch(() => compiled.delete(key));
  compiled.set(key, template);
  if (compiled.size > MAX_TEMPLATES) compiled.delete(compiled.keys().next().value!);
}

function template(task: FillTask): Promise<Template> | undefined {
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
  remember(task.key, t);
  return t;
}

async function load(task: LoadTask): Promise<RenderReply> {
  const assets = new Map(task.origin.assets);
  const absent = new Set(task.absent);
  const wants = new Set<string>();
  const resolve = async (p: string) => {
    const found = assets.get(p);
    if (!found && !absent.has(p)) wants.add(p);
    return found;
  };
  const loading = loadTemplate(task.origin.source, { assets: resolve, name: task.origin.name });
  try {
    const t = await loading;
    if (wants.size) return { wants: [...wants] };
    remember(task.key, loading);
    return { loaded: summaryOf(t) };
  } catch (err) {
    // a file the template names may be what it lacks: look it up before judging the template
    if (wants.size) return { wants: [...wants] };
    throw err;
  }
}

async function run(task: RenderTask): Promise<RenderReply> {
  if (task.op === 'load') return load(task);
  if (task.op === 'pages')
    return task.field
      ? { pages: (await openPart(task.pdf, task.field)).getPageCount(), pdf: task.pdf }
      : finishPrinted(task.pdf, task);
  if (task.op === 'view') {
    return { view: await viewCopy(task.pdf, task.options) };
  }
  if (task.op === 'print') return { printed: await printReady(task.pdf, task.size) };
  if (task.op === 'proof') return { proof: await proof(task.pdf, task.options) };
  if (task.op === 'merge') {
    const { pdf, pages } = await mergeParts(task.parts, { ...task.options, now: new Date(task.options.now) });
    return { merged: pdf, count: pages };
  }
  const t = template(task);
  if (!t) return { missing: true };
  const warnings: RenderWarning[] = [];
  const filled = await fillTemplate(await t, task.values, {
    now: new Date(task.now),
    warnings,
    timeoutMs: task.timeoutMs,
    standard: task.standard,
    metadata: task.metadata,
    attachments: task.attachments,
    numbering: task.numbering,
  });
  return { filled, warnings };
}

export default async function render(task: RenderTask): Promise<RenderReply> {
  useZlibGate(task.gate);
  task.started?.postMessage('started');
  task.started?.close();
  try {
    return await run(task);
  } catch (err) {
    if (err instanceof PaperlinkError) return { error: errorData(err) };
    return { failure: err instanceof Error ? (err.stack ?? err.message) : String(err) };
  }
}
